//! csv: the CSV state machine (in progress).
