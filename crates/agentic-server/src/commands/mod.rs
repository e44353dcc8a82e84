//! One module per CLI command; each exposes an `Args` struct and a `run` function that
//! returns the process exit code.

pub(crate) mod check;
pub(crate) mod compare;
pub(crate) mod evaluation;
pub(crate) mod evidence;
pub(crate) mod judge;
pub(crate) mod lint;
pub(crate) mod promote;
pub(crate) mod run;
pub(crate) mod score;
