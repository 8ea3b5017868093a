//! ExecutorAllocationManager rules (pure state machine): being written.
