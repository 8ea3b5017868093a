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
    pub results: Vec<Option<Value>>,
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
            results: vec![None; num_partitions],
        }
    }

    /// Records output `output_id`'s value; false if it was already done (or out of range).
    pub fn task_succeeded(&mut self, output_id: u32, value: Value) -> bool {
        match self.finished.get_mut(output_id as usize) {
            Some(done) if !*done => {
                *done = true;
                self.num_finished += 1;
                self.results[output_id as usize] = Some(value);
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
        std::mem::take(&mut self.results)
            .into_iter()
            .map(|v| v.unwrap_or(Value::Null))
            .collect()
    }
}
