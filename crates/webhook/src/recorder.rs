//! Records the outcomes of attempts that end together in one write: the first attempt to finish
//! writes, the ones that finish meanwhile wait and go into the next write together (group
//! commit, as the SQLite writer does for requests). Under load a round's attempts end within
//! a millisecond of each other, so a round costs one or two writes instead of one per attempt.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures_channel::oneshot;

use crate::ports::{AttemptRecord, DeliveryStore, StoreError};

type Waiter = oneshot::Sender<Result<(), StoreError>>;

#[derive(Debug, Default)]
struct Queue {
    records: Vec<AttemptRecord>,
    waiters: Vec<Waiter>,
    /// Whether an attempt is writing now (and will write what is queued after it).
    writing: bool,
}

#[derive(Debug)]
pub(crate) struct Recorder {
    store: Arc<dyn DeliveryStore>,
    queue: Mutex<Queue>,
}

/// Held by the attempt that writes: should its future be dropped mid-write (shutdown), the
/// queue is handed back and everyone waiting hears that their record was not written.
struct Writing<'a> {
    recorder: &'a Recorder,
    done: bool,
}

impl Drop for Writing<'_> {
    fn drop(&mut self) {
        if !self.done {
            let mut queue = self.recorder.queue();
            queue.writing = false;
            queue.records.clear();
            // Dropping the senders answers their receivers with `Canceled`.
            queue.waiters.clear();
        }
    }
}

impl Recorder {
    pub(crate) fn new(store: Arc<dyn DeliveryStore>) -> Self {
        Self {
            store,
            queue: Mutex::new(Queue::default()),
        }
    }

    fn queue(&self) -> MutexGuard<'_, Queue> {
        // Each change under the lock is a push or a take: a panic cannot leave it half-done.
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records one attempt, in a write shared with the attempts that end meanwhile; answers
    /// when its own record is written (or `NotFound` for an unknown delivery).
    pub(crate) async fn record(&self, record: AttemptRecord) -> Result<(), StoreError> {
        let (sender, written) = oneshot::channel();
        let leads = {
            let mut queue = self.queue();
            queue.records.push(record);
            queue.waiters.push(sender);
            !std::mem::replace(&mut queue.writing, true)
        };
        if leads {
            self.write_queued().await;
        }
        written.await.unwrap_or_else(|_| {
            Err(StoreError::Unavailable(
                "the write of this attempt was abandoned".into(),
            ))
        })
    }

    /// Writes what is queued, again and again, until nothing is.
    async fn write_queued(&self) {
        let mut writing = Writing {
            recorder: self,
            done: false,
        };
        loop {
            let (records, waiters) = {
                let mut queue = self.queue();
                if queue.records.is_empty() {
                    queue.writing = false;
                    writing.done = true;
                    return;
                }
                (
                    std::mem::take(&mut queue.records),
                    std::mem::take(&mut queue.waiters),
                )
            };
            match self.store.record_attempts(&records).await {
                Ok(found) => {
                    for (waiter, found) in waiters.into_iter().zip(found) {
                        let _ = waiter.send(if found {
                            Ok(())
                        } else {
                            Err(StoreError::NotFound)
                        });
                    }
                }
                Err(error) => {
                    // The error is not `Clone`: each waiter gets its text.
                    let reason = error.to_string();
                    for waiter in waiters {
                        let _ = waiter.send(Err(StoreError::Unavailable(reason.clone().into())));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use async_trait::async_trait;
    use futures_util::FutureExt;
    use idconsent_kernel::id::{ApplicationId, DeliveryId, TypedId};
    use idconsent_kernel::{Environment, Page, PageRequest, Timestamp};

    use super::*;
    use crate::model::{Attempt, Delivery, DeliveryStatus, Outbox};
    use crate::ports::NextStep;
    use crate::retries::{ManualRetry, RetryAllowance};

    /// Knows deliveries `whd_0` … `whd_9`; counts the writes and their sizes; yields once in
    /// each write, so that the other attempts queue up behind it.
    #[derive(Debug, Default)]
    struct Writes {
        sizes: Mutex<Vec<usize>>,
        fail: bool,
    }

    #[async_trait]
    impl DeliveryStore for Writes {
        async fn enqueue(&self, _: &[Outbox]) -> Result<(), StoreError> {
            unreachable!()
        }
        async fn list(
            &self,
            _: &ApplicationId,
            _: Environment,
            _: Option<DeliveryStatus>,
            _: PageRequest,
        ) -> Result<Page<Delivery>, StoreError> {
            unreachable!()
        }
        async fn find(
            &self,
            _: &ApplicationId,
            _: Environment,
            _: &DeliveryId,
        ) -> Result<Option<Delivery>, StoreError> {
            unreachable!()
        }
        async fn lease_due(
            &self,
            _: Timestamp,
            _: Timestamp,
            _: u32,
            _: &[ApplicationId],
        ) -> Result<Vec<Delivery>, StoreError> {
            unreachable!()
        }
        async fn release(&self, _: &[DeliveryId], _: Timestamp) -> Result<(), StoreError> {
            unreachable!()
        }
        async fn record_attempts(
            &self,
            records: &[AttemptRecord],
        ) -> Result<Vec<bool>, StoreError> {
            self.sizes.lock().unwrap().push(records.len());
            // Lets the other attempts queue up behind this write.
            tokio::task::yield_now().await;
            if self.fail {
                return Err(StoreError::Unavailable("disk full".into()));
            }
            Ok(records
                .iter()
                .map(|record| record.delivery.as_str().len() == "whd_0".len())
                .collect())
        }
        async fn retry_now(
            &self,
            _: &ApplicationId,
            _: Environment,
            _: &DeliveryId,
            _: Timestamp,
            _: RetryAllowance,
        ) -> Result<ManualRetry, StoreError> {
            unreachable!()
        }
    }

    fn record(id: &str) -> AttemptRecord {
        AttemptRecord {
            delivery: DeliveryId::from_trusted(id.to_owned()),
            attempt: Attempt {
                at: Timestamp::from_millis(1),
                status_code: Some(204),
                error: None,
                duration_ms: 1,
            },
            next: NextStep::Succeeded,
        }
    }

    #[tokio::test]
    async fn attempts_that_end_together_share_a_write_and_each_hears_its_own_answer() {
        let store = Arc::new(Writes::default());
        let recorder = Recorder::new(store.clone());
        let ids: Vec<String> = (0..10)
            .map(|n| format!("whd_{n}"))
            .chain(["whd_unknown".to_owned()])
            .collect();
        let answers =
            futures_util::future::join_all(ids.iter().map(|id| recorder.record(record(id)))).await;
        assert!(answers[..10].iter().all(Result::is_ok));
        assert!(matches!(answers[10], Err(StoreError::NotFound)));
        let sizes = store.sizes.lock().unwrap().clone();
        assert_eq!(sizes.iter().sum::<usize>(), 11, "each record written once");
        assert_eq!(sizes, [1, 10], "the first writes alone, the rest together");
    }

    #[tokio::test]
    async fn a_failed_write_reaches_everyone_in_it_and_the_next_write_starts_afresh() {
        let store = Arc::new(Writes {
            fail: true,
            ..Writes::default()
        });
        let recorder = Recorder::new(store.clone());
        let answers = futures_util::future::join_all(
            ["whd_0", "whd_1", "whd_2"].map(|id| recorder.record(record(id))),
        )
        .await;
        assert!(
            answers
                .iter()
                .all(|answer| matches!(answer, Err(StoreError::Unavailable(_))))
        );
        assert!(!recorder.queue().writing, "no write is left running");
    }

    #[tokio::test]
    async fn an_abandoned_write_answers_its_waiters_instead_of_leaving_them_hanging() {
        let store = Arc::new(Writes::default());
        let recorder = Recorder::new(store.clone());
        let mut leader = Box::pin(recorder.record(record("whd_0")));
        // The leader starts its write and is suspended in it.
        assert!(leader.as_mut().now_or_never().is_none());
        let mut follower = Box::pin(recorder.record(record("whd_1")));
        assert!(follower.as_mut().now_or_never().is_none());
        drop(leader);
        assert!(matches!(follower.await, Err(StoreError::Unavailable(_))));
        assert!(!recorder.queue().writing);
    }
}
