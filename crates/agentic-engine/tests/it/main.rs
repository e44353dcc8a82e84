//! Integration tests of the engine: real processes, real files, the real replay provider.

mod adapters;
mod attempts;
mod outputs;
mod scheduling;
mod strategy;
mod support;
