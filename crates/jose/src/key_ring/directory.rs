//! The key directory on disk: `keys.json` and one PEM file per key (see the module above).

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;

use josekit::jws::ES256;
use serde::{Deserialize, Serialize};

use super::{KeyMaterial, KeyRingEntry, KeyRingError, RingKey, valid_kid};

const INDEX_FILE: &str = "keys.json";
const INDEX_VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
struct IndexFile {
    version: u32,
    keys: Vec<KeyRingEntry>,
}

pub(super) fn load_keys(dir: &Path) -> Result<Vec<RingKey>, KeyRingError> {
    let index_path = dir.join(INDEX_FILE);
    let text = match fs::read(&index_path) {
        Ok(text) => text,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(KeyRingError::Io {
                path: index_path,
                source,
            });
        }
    };
    let index_error = |message: String| KeyRingError::Index {
        path: index_path.clone(),
        message,
    };
    let index: IndexFile =
        serde_json::from_slice(&text).map_err(|error| index_error(error.to_string()))?;
    if index.version != INDEX_VERSION {
        return Err(index_error(format!(
            "unsupported version {}",
            index.version
        )));
    }
    let mut keys: Vec<RingKey> = Vec::with_capacity(index.keys.len());
    for info in index.keys {
        if !valid_kid(&info.kid) {
            return Err(index_error(format!("invalid kid {:?}", info.kid)));
        }
        if keys.iter().any(|key| key.info.kid == info.kid) {
            return Err(index_error(format!("duplicate kid {}", info.kid)));
        }
        let pem_path = dir.join(format!("{}.pem", info.kid));
        let pem = fs::read(&pem_path).map_err(|source| KeyRingError::Io {
            path: pem_path,
            source,
        })?;
        let key_pair = ES256
            .key_pair_from_pem(&pem)
            .map_err(|error| KeyRingError::Key {
                kid: info.kid.clone(),
                message: error.to_string(),
            })?;
        let material = Arc::new(KeyMaterial::new(&info.kid, &key_pair)?);
        keys.push(RingKey { info, material });
    }
    Ok(keys)
}

pub(super) fn write_index(dir: &Path, keys: &[RingKey]) -> Result<(), KeyRingError> {
    let index = IndexFile {
        version: INDEX_VERSION,
        keys: keys.iter().map(|key| key.info.clone()).collect(),
    };
    let path = dir.join(INDEX_FILE);
    let mut text = serde_json::to_vec_pretty(&index).map_err(|error| KeyRingError::Index {
        path: path.clone(),
        message: error.to_string(),
    })?;
    text.push(b'\n');
    let temporary = dir.join(format!("{INDEX_FILE}.tmp"));
    match fs::remove_file(&temporary) {
        Ok(()) => {}
        Err(error) if error.kind() == io::ErrorKind::NotFound => {}
        Err(source) => {
            return Err(KeyRingError::Io {
                path: temporary,
                source,
            });
        }
    }
    write_private_file(&temporary, &text)?;
    fs::rename(&temporary, &path).map_err(|source| KeyRingError::Io { path, source })
}

/// Creates `path` (which must not exist) readable and writable by its owner only.
pub(super) fn write_private_file(path: &Path, contents: &[u8]) -> Result<(), KeyRingError> {
    let io_error = |source| KeyRingError::Io {
        path: path.to_owned(),
        source,
    };
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path).map_err(io_error)?;
    file.write_all(contents).map_err(io_error)?;
    file.sync_all().map_err(io_error)
}

pub(super) fn create_private_dir(dir: &Path) -> Result<(), KeyRingError> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir).map_err(|source| KeyRingError::Io {
        path: dir.to_owned(),
        source,
    })
}
