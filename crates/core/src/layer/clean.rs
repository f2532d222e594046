//! Finding the chats' layers on disk and removing the ones nobody uses: at once (`tandem
//! workspace clean`, Settings), or, at start-up, moved aside into `workspaces/.trash` (a
//! rename: the start stays quick) and deleted there by a thread of their own. A layer in
//! use (its lock held) is never touched.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use super::{Layer, LayerError, allow_removal, base_dir, io, lock};

/// Where layers retired at start-up wait to be deleted.
fn trash_dir(data_dir: &Path) -> PathBuf {
    base_dir(data_dir).join(".trash")
}

/// Every chat's layer under `data_dir`, by chat id.
pub fn list(data_dir: &Path) -> Vec<Layer> {
    let Ok(entries) = fs::read_dir(base_dir(data_dir)) else {
        return Vec::new();
    };
    let mut layers: Vec<Layer> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| {
            let id = e.file_name().to_str()?.parse::<i64>().ok()?;
            Some(Layer::of(data_dir, id))
        })
        .collect();
    layers.sort_by_key(|l| l.chat_id);
    layers
}

impl Layer {
    /// Removes it unless a workspace of it is open: `Ok(false)` when one is (it stays).
    pub fn discard_unused(&self) -> Result<bool, LayerError> {
        let Some(lock) = lock::try_take(&self.dir)? else {
            return Ok(false);
        };
        if self.dir.exists() {
            allow_removal(&self.dir);
            fs::remove_dir_all(&self.dir).map_err(io(&self.dir))?;
        }
        let _ = fs::remove_file(lock::path_of(&self.dir));
        drop(lock);
        Ok(true)
    }

    /// Moves it into the trash for [`empty_trash`] to delete, unless a workspace of it is
    /// open: `Ok(false)` when one is.
    pub fn retire(&self, data_dir: &Path) -> Result<bool, LayerError> {
        let Some(lock) = lock::try_take(&self.dir)? else {
            return Ok(false);
        };
        if self.dir.exists() {
            let trash = trash_dir(data_dir);
            fs::create_dir_all(&trash).map_err(io(&trash))?;
            let nanos = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            let to = trash.join(format!("{}-{}-{nanos}", self.chat_id, std::process::id()));
            fs::rename(&self.dir, &to).map_err(io(&self.dir))?;
        }
        let _ = fs::remove_file(lock::path_of(&self.dir));
        drop(lock);
        Ok(true)
    }
}

/// Whether layers wait in the trash.
pub fn trash_waiting(data_dir: &Path) -> bool {
    trash_dir(data_dir).is_dir()
}

/// Deletes what waits in the trash (best effort: what is left is deleted next time).
pub fn empty_trash(data_dir: &Path) {
    let trash = trash_dir(data_dir);
    if !trash.is_dir() {
        return;
    }
    allow_removal(&trash);
    let _ = fs::remove_dir_all(&trash);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_are_listed_cleaned_and_retired_unless_in_use() {
        let data = tempfile::tempdir().unwrap();
        let project = data.path().join("project");
        fs::create_dir_all(&project).unwrap();
        fs::write(project.join("a.txt"), "a").unwrap();
        for id in [3, 12] {
            let layer = Layer::of(data.path(), id);
            let workspace = super::super::Workspace::open(layer, &project, true).unwrap();
            fs::write(workspace.view().join("b.txt"), "b").unwrap();
        }
        fs::create_dir_all(base_dir(data.path()).join("not-a-chat")).unwrap();
        let ids: Vec<i64> = list(data.path()).iter().map(|l| l.chat_id).collect();
        assert_eq!(ids, [3, 12]);
        assert!(Layer::of(data.path(), 3).size() > 0);
        assert_eq!(
            Layer::of(data.path(), 3).kind(),
            Some(super::super::Kind::Copy)
        );

        // In use: neither cleaned nor retired.
        let open =
            super::super::Workspace::open(Layer::of(data.path(), 3), &project, true).unwrap();
        assert!(Layer::of(data.path(), 3).in_use());
        assert!(!Layer::of(data.path(), 3).discard_unused().unwrap());
        assert!(!Layer::of(data.path(), 3).retire(data.path()).unwrap());
        let busy = super::super::Workspace::open(Layer::of(data.path(), 3), &project, true);
        assert!(matches!(busy, Err(LayerError::Busy)), "{busy:?}");
        drop(open);

        assert!(Layer::of(data.path(), 3).discard_unused().unwrap());
        assert!(!Layer::of(data.path(), 3).exists());
        assert!(Layer::of(data.path(), 12).retire(data.path()).unwrap());
        assert!(!Layer::of(data.path(), 12).exists());
        assert!(trash_waiting(data.path()));
        empty_trash(data.path());
        assert!(!trash_waiting(data.path()));
        assert!(list(data.path()).is_empty());
        let left: Vec<_> = fs::read_dir(base_dir(data.path()))
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(left, ["not-a-chat"], "no lock files left behind");
    }
}
