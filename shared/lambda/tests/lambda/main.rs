//! The Lambda edge: its handlers over real stores and the SQS API, and its parsers fuzzed:
//! one test binary.

mod fuzz;
mod lambda;
mod sqs_outage;
