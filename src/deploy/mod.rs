//! The submission side: SparkSubmit's arguments (the Client, the ApplicationMaster and the
//! allocator arrive with the YARN-side milestone).

pub mod spark_submit_arguments;
