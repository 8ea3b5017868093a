mod actor;
pub use actor::*;
