//! One module per CLI command; each exposes an `Args` struct and a `run` function that
//! returns the process exit code.

pub(crate) mod check;
pub(crate) mod evidence;
pub(crate) mod lint;
pub(crate) mod compare;
pub(crate) mod promote;
pub(crate) mod score;
