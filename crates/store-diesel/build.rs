//! `embed_migrations!` reads the migration directories at compile time; a migration added
//! later must rebuild this crate (diesel_migrations' documented advice).
fn main() {
    println!("cargo:rerun-if-changed=../../migrations");
}
