//! Leader election with a `coordination.k8s.io/v1` Lease, so two replicas never both act.
//!
//! The protocol is client-go's: a replica may take the Lease when nobody holds it, when it
//! already holds it, or when the holder's `renewTime + leaseDurationSeconds` has passed. Every
//! write is an optimistic update (the read `resourceVersion` is sent back), so two replicas
//! racing for an expired Lease cannot both win: one gets a 409 Conflict and waits. The holder
//! renews every `renew_every`; when a renewal fails for longer than the lease duration it
//! must assume it lost the Lease and stop. On shutdown the holder releases the Lease (empty
//! holder) so a successor can start at once.
//!
//! [`decide`] is the pure part and is unit-tested; [`LeaderElector`] does the I/O.

use std::time::Duration;

use k8s_openapi::{
    api::coordination::v1::{Lease, LeaseSpec},
    apimachinery::pkg::apis::meta::v1::MicroTime,
    jiff::{SignedDuration, Timestamp},
};
use kube::{
    Api,
    api::{ObjectMeta, PostParams},
};

/// What a candidate should do about a Lease it has just read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseDecision {
    /// Take (or keep) the Lease: nobody holds it, we hold it, or the holder's term expired.
    Take {
        /// True when the holder changes (the transitions counter goes up).
        new_holder: bool,
    },
    /// Someone else holds a valid Lease; try again after this long.
    Wait(Duration),
}

/// Decides whether `me` may take a Lease with `spec` at `now`.
pub fn decide(spec: Option<&LeaseSpec>, me: &str, now: Timestamp) -> LeaseDecision {
    let Some(spec) = spec else {
        return LeaseDecision::Take { new_holder: true };
    };
    let holder = spec.holder_identity.as_deref().unwrap_or("");
    if holder.is_empty() {
        return LeaseDecision::Take { new_holder: true };
    }
    if holder == me {
        return LeaseDecision::Take { new_holder: false };
    }
    let duration = SignedDuration::from_secs(i64::from(spec.lease_duration_seconds.unwrap_or(15).max(1)));
    let renewed = spec
        .renew_time
        .as_ref()
        .or(spec.acquire_time.as_ref())
        .map(|t| t.0);
    match renewed {
        Some(renewed) if renewed + duration > now => {
            let left = (renewed + duration).duration_since(now);
            LeaseDecision::Wait(Duration::try_from(left).unwrap_or(Duration::from_secs(1)))
        }
        _ => LeaseDecision::Take { new_holder: true },
    }
}

/// A candidate for one Lease.
pub struct LeaderElector {
    api: Api<Lease>,
    name: String,
    identity: String,
    lease_duration: Duration,
    /// How often the holder renews.
    pub renew_every: Duration,
}

impl LeaderElector {
    /// A candidate called `identity` for the Lease `namespace/name`.
    pub fn new(client: kube::Client, namespace: &str, name: &str, identity: String) -> Self {
        Self {
            api: Api::namespaced(client, namespace),
            name: name.to_owned(),
            identity,
            lease_duration: Duration::from_secs(15),
            renew_every: Duration::from_secs(5),
        }
    }

    /// This candidate's identity.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Tries once to take or renew the Lease. `Ok(None)` = we hold it now;
    /// `Ok(Some(wait))` = someone else does.
    pub async fn try_acquire(&self) -> kube::Result<Option<Duration>> {
        let now = Timestamp::now();
        let current = self.api.get_opt(&self.name).await?;
        let decision = decide(
            current.as_ref().and_then(|l| l.spec.as_ref()),
            &self.identity,
            now,
        );
        let LeaseDecision::Take { new_holder } = decision else {
            let LeaseDecision::Wait(wait) = decision else {
                return Ok(Some(self.renew_every));
            };
            return Ok(Some(wait.min(self.renew_every)));
        };
        let old = current.as_ref().and_then(|l| l.spec.clone()).unwrap_or_default();
        let spec = LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(i32::try_from(self.lease_duration.as_secs()).unwrap_or(15)),
            acquire_time: if new_holder {
                Some(MicroTime(now))
            } else {
                old.acquire_time.clone()
            },
            renew_time: Some(MicroTime(now)),
            lease_transitions: Some(
                old.lease_transitions.unwrap_or(0) + i32::from(new_holder && current.is_some()),
            ),
            ..LeaseSpec::default()
        };
        let result = match current {
            Some(mut lease) => {
                lease.spec = Some(spec);
                self.api.replace(&self.name, &PostParams::default(), &lease).await
            }
            None => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(self.name.clone()),
                        ..ObjectMeta::default()
                    },
                    spec: Some(spec),
                };
                self.api.create(&PostParams::default(), &lease).await
            }
        };
        match result {
            Ok(_) => Ok(None),
            // Someone else wrote the Lease between our read and write: they won this round.
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(Some(self.renew_every)),
            Err(err) => Err(err),
        }
    }

    /// Blocks until this candidate holds the Lease.
    pub async fn acquire(&self) {
        loop {
            match self.try_acquire().await {
                Ok(None) => return,
                Ok(Some(wait)) => {
                    tracing::debug!(holder_wait = ?wait, "lease held by another replica");
                    tokio::time::sleep(wait).await;
                }
                Err(err) => {
                    tracing::warn!(error = %err, "failed to read or write the leader lease");
                    tokio::time::sleep(self.renew_every).await;
                }
            }
        }
    }

    /// Renews the Lease until a renewal has failed for a whole lease duration (returns then:
    /// the caller must stop acting).
    pub async fn keep_renewing(&self) {
        let mut last_ok = tokio::time::Instant::now();
        loop {
            tokio::time::sleep(self.renew_every).await;
            match self.try_acquire().await {
                Ok(None) => last_ok = tokio::time::Instant::now(),
                Ok(Some(_)) => {
                    tracing::error!("lost the leader lease to another replica");
                    return;
                }
                Err(err) => {
                    tracing::warn!(error = %err, "failed to renew the leader lease");
                    if last_ok.elapsed() >= self.lease_duration {
                        return;
                    }
                }
            }
        }
    }

    /// Gives the Lease up (empty holder), if we still hold it.
    pub async fn release(&self) {
        let Ok(Some(mut lease)) = self.api.get_opt(&self.name).await else {
            return;
        };
        let holds =
            lease.spec.as_ref().and_then(|s| s.holder_identity.as_deref()) == Some(self.identity.as_str());
        if !holds {
            return;
        }
        if let Some(spec) = lease.spec.as_mut() {
            spec.holder_identity = None;
            spec.renew_time = None;
        }
        if let Err(err) = self.api.replace(&self.name, &PostParams::default(), &lease).await {
            tracing::warn!(error = %err, "failed to release the leader lease");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + secs).unwrap()
    }

    fn held_by(holder: &str, renewed: i64) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(holder.into()),
            lease_duration_seconds: Some(15),
            renew_time: Some(MicroTime(at(renewed))),
            ..LeaseSpec::default()
        }
    }

    #[test]
    fn a_missing_or_released_lease_is_taken() {
        assert_eq!(decide(None, "a", at(0)), LeaseDecision::Take { new_holder: true });
        let released = LeaseSpec::default();
        assert_eq!(
            decide(Some(&released), "a", at(0)),
            LeaseDecision::Take { new_holder: true }
        );
    }

    #[test]
    fn the_holder_keeps_its_lease() {
        assert_eq!(
            decide(Some(&held_by("a", 0)), "a", at(100)),
            LeaseDecision::Take { new_holder: false }
        );
    }

    #[test]
    fn a_valid_lease_of_another_replica_makes_us_wait_for_its_remaining_term() {
        assert_eq!(
            decide(Some(&held_by("b", 0)), "a", at(10)),
            LeaseDecision::Wait(Duration::from_secs(5))
        );
    }

    #[test]
    fn an_expired_lease_of_another_replica_is_taken_over() {
        assert_eq!(
            decide(Some(&held_by("b", 0)), "a", at(16)),
            LeaseDecision::Take { new_holder: true }
        );
    }
}
