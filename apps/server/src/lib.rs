#![doc = include_str!("../README.md")]

mod admin;
pub mod cli;
pub mod config;
mod errors;
mod health;
pub mod http;
pub mod server;
mod telemetry;
pub mod wiring;
mod workers;

pub use config::{Config, Mode, Settings};
pub use server::{RunningServer, StartError, start};
