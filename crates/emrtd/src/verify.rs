//! One chip verification, start to end, on the calling thread.

use idconsent_verification::chip::{
    ActiveAuthentication, ActiveFailure, ChipAuthentication, ChipCheck, ChipReport, ContentProblem,
    DataGroup, PassiveAuthentication, PassiveFailure, Revocation,
};

use crate::aa;
use crate::algorithms::PublicKey;
use crate::lds;
use crate::sod::{self, Sod};
use crate::trust::TrustStore;

/// Passive authentication: the first failing step, in the order structure, SOD signature,
/// chain to a CSCA, validity, revocation, data group hashes.
struct Passive {
    result: PassiveAuthentication,
    verified: Vec<DataGroup>,
    document_signer: Option<idconsent_verification::chip::DocumentSigner>,
    csca: Option<idconsent_verification::chip::CscaAnchor>,
    revocation: Revocation,
}

fn passive(trust: &TrustStore, check: &ChipCheck) -> Passive {
    let mut outcome = Passive {
        result: PassiveAuthentication::Passed,
        verified: Vec::new(),
        document_signer: None,
        csca: None,
        revocation: Revocation::NotChecked,
    };
    let sod: Sod = match sod::parse(check.evidence.sod()) {
        Ok(sod) => sod,
        Err(failure) => {
            outcome.result = PassiveAuthentication::Failed(failure);
            return outcome;
        }
    };
    outcome.document_signer = Some(sod.signed.signer.document_signer());
    // Hashes are compared whatever else fails, so a report names every data group that matched.
    let mut hash_failure = None;
    for group in check.evidence.present() {
        let Some(bytes) = check.evidence.data_group(group) else {
            continue;
        };
        match sod.hash_of(group.number()) {
            None => {
                hash_failure.get_or_insert(PassiveFailure::NotSigned(group));
            }
            Some(expected) if sod.hash.digest(&[bytes]) == expected => outcome.verified.push(group),
            Some(_) => {
                hash_failure.get_or_insert(PassiveFailure::HashMismatch(group));
            }
        }
    }
    let signature = sod.signed.verify().map_err(sod::failure);
    let (chain, csca, revocation) = trust.chain(&sod.signed.signer, check.at);
    outcome.csca = csca.map(|cert| cert.csca());
    outcome.revocation = revocation;
    let result = signature
        .and(chain)
        .and_then(|()| hash_failure.map_or(Ok(()), Err));
    if let Err(failure) = result {
        outcome.result = PassiveAuthentication::Failed(failure);
    }
    outcome
}

/// Runs the whole verification. Pure CPU work on untrusted bytes: call it on a blocking
/// thread (see [`crate::EmrtdVerifier`]).
pub fn verify_blocking(trust: &TrustStore, check: &ChipCheck) -> ChipReport {
    let evidence = &check.evidence;
    let passive = passive(trust, check);
    let mut problems = Vec::new();
    let mut note = |group: DataGroup, reason: String| {
        problems.push(ContentProblem {
            data_group: group,
            reason,
        })
    };
    let reference_year = idconsent_kernel::CalendarDate::of(check.at).year();
    let mrz = evidence.data_group(DataGroup::Dg1).and_then(|dg1| {
        lds::mrz(dg1, reference_year)
            .map_err(|e| note(DataGroup::Dg1, e))
            .ok()
    });
    let portrait = evidence
        .data_group(DataGroup::Dg2)
        .and_then(|dg2| lds::portrait(dg2).map_err(|e| note(DataGroup::Dg2, e)).ok());
    let personal_details = evidence.data_group(DataGroup::Dg11).and_then(|dg11| {
        lds::personal_details(dg11)
            .map_err(|e| note(DataGroup::Dg11, e))
            .ok()
    });
    let security_infos = evidence.data_group(DataGroup::Dg14).and_then(|dg14| {
        lds::security_infos(dg14)
            .map_err(|e| note(DataGroup::Dg14, e))
            .ok()
    });
    let chip_authentication = if security_infos.is_some_and(|infos| infos.chip_authentication) {
        ChipAuthentication::NotVerified
    } else {
        ChipAuthentication::NotSupported
    };

    let aa_key = evidence.data_group(DataGroup::Dg15).map(|dg15| {
        lds::aa_key_der(dg15)
            .map_err(ActiveFailure::BadKey)
            .and_then(|der| PublicKey::from_spki_der(der).map_err(aa::key_failure))
    });
    let active_authentication_key = match &aa_key {
        Some(Ok(key)) => Some(key.describe()),
        _ => None,
    };
    let active = match (aa_key, evidence.active_authentication()) {
        (None, _) => ActiveAuthentication::NotSupported,
        (Some(_), None) => ActiveAuthentication::NotAttempted,
        (Some(key), Some(answer)) => {
            let outcome = (|| {
                let issued = check
                    .issued_challenge
                    .ok_or(ActiveFailure::ChallengeNotIssued)?;
                if &issued != answer.challenge() {
                    return Err(ActiveFailure::ChallengeMismatch);
                }
                if !passive.verified.contains(&DataGroup::Dg15) {
                    return Err(ActiveFailure::KeyNotAuthenticated);
                }
                let key = key?;
                let dg14_hash = security_infos.and_then(|infos| infos.active_authentication_hash);
                aa::verify(&key, dg14_hash, answer.challenge(), answer.signature())
            })();
            match outcome {
                Ok(()) => ActiveAuthentication::Passed,
                Err(failure) => ActiveAuthentication::Failed(failure),
            }
        }
    };

    ChipReport {
        passive_authentication: passive.result,
        active_authentication: active,
        chip_authentication,
        data_groups_verified: passive.verified,
        document_signer: passive.document_signer,
        csca: passive.csca,
        revocation: passive.revocation,
        mrz,
        portrait,
        personal_details,
        active_authentication_key,
        content_problems: problems,
    }
}
