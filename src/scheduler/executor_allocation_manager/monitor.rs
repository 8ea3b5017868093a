//! ExecutorMonitor (pure): being written.
