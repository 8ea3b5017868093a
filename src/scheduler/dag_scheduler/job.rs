//! Active jobs (Spark's `ActiveJob` together with the `JobWaiter` that collects its
//! results): which outputs are done and their values, one per requested partition.
//!
//! Layer: scheduler (the Spark side: the driver's schedulers, above rdd).

use crate::rdd::Value;

/// A running job.
#[derive(Clone, Debug)]
pub(crate) struct ActiveJob {
    pub job_id: u32,
    /// Its ResultStage.
    pub final_stage: u32,
    pub call_site: String,
    pub properties: Vec<(String, String)>,
    /// When JobSubmitted was handled (for "Job N finished: ..., took X ms").
    pub submitted_ms: u64,
    /// Per output id (position in the requested partitions): done yet?
    pub finished: Vec<bool>,
    pub num_finished: u32,
    /// Per output id: the result task's value.
    results: JobResults,
}

/// The result tasks' values by output id: 8 bytes an output while every value is an
/// integer (count, the common action over many tiny tasks), a value slot each from the first
/// value that is not.
#[derive(Clone, Debug)]
enum JobResults {
    /// Meaningful where `finished` says the output is done.
    Ints(Vec<i64>),
    Values(Vec<Option<Value>>),
}

impl ActiveJob {
    pub fn new(
        job_id: u32,
        final_stage: u32,
        call_site: String,
        properties: Vec<(String, String)>,
        num_partitions: usize,
        submitted_ms: u64,
    ) -> ActiveJob {
        ActiveJob {
            job_id,
            final_stage,
            call_site,
            properties,
            submitted_ms,
            finished: vec![false; num_partitions],
            num_finished: 0,
            results: JobResults::Ints(vec![0; num_partitions]),
        }
    }

    /// Records output `output_id`'s value; false if it was already done (or out of range).
    pub fn task_succeeded(&mut self, output_id: u32, value: Value) -> bool {
        match self.finished.get_mut(output_id as usize) {
            Some(done) if !*done => {
                *done = true;
                self.num_finished += 1;
                let i = output_id as usize;
                match (&mut self.results, value) {
                    (JobResults::Ints(ints), Value::I64(v)) => ints[i] = v,
                    (JobResults::Ints(ints), value) => {
                        let mut values: Vec<Option<Value>> = ints
                            .iter()
                            .zip(&self.finished)
                            .map(|(v, done)| done.then_some(Value::I64(*v)))
                            .collect();
                        values[i] = Some(value);
                        self.results = JobResults::Values(values);
                    }
                    (JobResults::Values(values), value) => values[i] = Some(value),
                }
                true
            }
            _ => false,
        }
    }

    pub fn is_finished(&self, output_id: u32) -> bool {
        self.finished.get(output_id as usize).copied().unwrap_or(true)
    }

    pub fn all_finished(&self) -> bool {
        self.num_finished as usize == self.finished.len()
    }

    /// The output ids not finished yet (Spark's `ResultStage.findMissingPartitions`).
    pub fn missing_outputs(&self) -> Vec<u32> {
        self.finished
            .iter()
            .enumerate()
            .filter(|(_, done)| !**done)
            .map(|(i, _)| i as u32)
            .collect()
    }

    /// The values in output order (consumes them).
    pub fn take_results(&mut self) -> Vec<Value> {
        match std::mem::replace(&mut self.results, JobResults::Values(Vec::new())) {
            JobResults::Ints(ints) => ints
                .into_iter()
                .zip(&self.finished)
                .map(|(v, done)| if *done { Value::I64(v) } else { Value::Null })
                .collect(),
            JobResults::Values(values) => values.into_iter().map(|v| v.unwrap_or(Value::Null)).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(n: usize) -> ActiveJob {
        ActiveJob::new(0, 0, "count at T".into(), vec![], n, 0)
    }

    #[test]
    fn integer_results_come_back_in_output_order_with_null_for_missing_ones() {
        let mut j = job(4);
        assert!(j.task_succeeded(2, Value::I64(7)));
        assert!(j.task_succeeded(0, Value::I64(-1)));
        assert!(!j.task_succeeded(2, Value::I64(9)), "an output counts once");
        assert!(j.task_succeeded(3, Value::I64(0)));
        assert_eq!(j.missing_outputs(), vec![1]);
        assert_eq!(
            j.take_results(),
            vec![Value::I64(-1), Value::Null, Value::I64(7), Value::I64(0)]
        );
    }

    #[test]
    fn a_value_that_is_not_an_integer_keeps_every_earlier_value() {
        let mut j = job(4);
        assert!(j.task_succeeded(1, Value::I64(5)));
        assert!(j.task_succeeded(3, Value::Str("x".into())));
        assert!(j.task_succeeded(0, Value::I64(6)));
        assert!(!j.task_succeeded(3, Value::I64(1)));
        assert!(j.task_succeeded(2, Value::Null));
        assert!(j.all_finished());
        assert_eq!(
            j.take_results(),
            vec![Value::I64(6), Value::I64(5), Value::Null, Value::Str("x".into())]
        );
    }
}
