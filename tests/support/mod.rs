//! Shared helpers for the integration test suites (`mod support;` in each `tests/*.rs`).
//!
//! Each test binary compiles this module on its own and uses only part of it.
#![allow(dead_code)]

pub mod cluster;
