//! The tables, in diesel's backend-neutral form. Kept in step with both migration folders; the
//! `schema_matches_migrations` test loads every table through it on both backends.

diesel::table! {
    outgoing_messages (id) {
        id -> Text,
        channel -> Text,
        recipient -> Text,
        subject -> Text,
        body -> Text,
        code -> Nullable<Text>,
        link -> Nullable<Text>,
        status -> Text,
        attempts -> Integer,
        last_error -> Nullable<Text>,
        next_attempt_at -> BigInt,
        created_at -> BigInt,
        delivered_at -> Nullable<BigInt>,
    }
}

diesel::table! {
    merchants (id) {
        id -> Text,
        business_name -> Text,
        contact_name -> Text,
        entity_type -> Text,
        industry -> Text,
        email -> Text,
        phone -> Text,
        email_verified_at -> Nullable<BigInt>,
        phone_verified_at -> Nullable<BigInt>,
        registered_name -> Text,
        registration_number -> Text,
        date_registered -> Text,
        address -> Nullable<Text>,
        usecase -> Nullable<Text>,
        description -> Nullable<Text>,
        identity_type -> Nullable<Text>,
        identity_number -> Nullable<Text>,
        registry_status -> Text,
        registry_checked_at -> Nullable<BigInt>,
        status -> Text,
        submitted_at -> Nullable<BigInt>,
        decided_at -> Nullable<BigInt>,
        rejection_reason -> Nullable<Text>,
        plan -> Text,
        created_at -> BigInt,
        updated_at -> BigInt,
    }
}

diesel::table! {
    merchant_users (id) {
        id -> Text,
        merchant_id -> Text,
        email -> Text,
        name -> Text,
        role -> Text,
        status -> Text,
        password_hash -> Nullable<Text>,
        failed_logins -> Integer,
        locked_until -> Nullable<BigInt>,
        created_at -> BigInt,
        updated_at -> BigInt,
    }
}

diesel::table! {
    merchant_documents (id) {
        id -> Text,
        merchant_id -> Text,
        document_type -> Text,
        file_name -> Text,
        format -> Text,
        size -> BigInt,
        sha256 -> Text,
        blob_key -> Text,
        status -> Text,
        uploaded_at -> BigInt,
    }
}

diesel::table! {
    one_time_codes (purpose, subject) {
        purpose -> Text,
        subject -> Text,
        code_hash -> Text,
        expires_at -> BigInt,
        attempts_left -> Integer,
        created_at -> BigInt,
    }
}

diesel::table! {
    applications (id) {
        id -> Text,
        merchant_id -> Text,
        client_id -> Text,
        name -> Text,
        callback_url -> Text,
        redirect_uris -> Text,
        request_types -> Text,
        secret -> Text,
        webhook_secret -> Text,
        previous_secret -> Nullable<Text>,
        previous_secret_expires_at -> Nullable<BigInt>,
        previous_webhook_secret -> Nullable<Text>,
        previous_webhook_secret_expires_at -> Nullable<BigInt>,
        created_at -> BigInt,
        updated_at -> BigInt,
    }
}

diesel::table! {
    api_credentials (id) {
        id -> BigInt,
        application_id -> Text,
        environment -> Text,
        key_hash -> Text,
        key_sealed -> Text,
        generated_at -> BigInt,
        revoked_at -> Nullable<BigInt>,
    }
}

diesel::table! {
    request_fingerprints (fingerprint) {
        fingerprint -> Text,
        expires_at -> BigInt,
    }
}

diesel::table! {
    idempotency_keys (scope, key) {
        scope -> Text,
        key -> Text,
        request_hash -> Text,
        state -> Text,
        response_status -> Nullable<Integer>,
        response_body -> Nullable<Binary>,
        created_at -> BigInt,
        expires_at -> BigInt,
    }
}

diesel::joinable!(api_credentials -> applications (application_id));
diesel::joinable!(applications -> merchants (merchant_id));

diesel::allow_tables_to_appear_in_same_query!(applications, api_credentials, merchants);

diesel::table! {
    webhook_events (id) {
        id -> Text,
        event_type -> Text,
        application_id -> Text,
        environment -> Text,
        body -> Binary,
        created_at -> BigInt,
    }
}

diesel::table! {
    webhook_deliveries (id) {
        id -> Text,
        event_id -> Text,
        application_id -> Text,
        environment -> Text,
        url -> Text,
        status -> Text,
        next_attempt_at -> Nullable<BigInt>,
        created_at -> BigInt,
        manual_retries -> Integer,
        manual_retries_since -> Nullable<BigInt>,
    }
}

diesel::table! {
    webhook_attempts (id) {
        id -> BigInt,
        delivery_id -> Text,
        attempted_at -> BigInt,
        status_code -> Nullable<Integer>,
        error -> Nullable<Text>,
        duration_ms -> BigInt,
    }
}

diesel::joinable!(webhook_deliveries -> webhook_events (event_id));
diesel::joinable!(webhook_attempts -> webhook_deliveries (delivery_id));

diesel::allow_tables_to_appear_in_same_query!(webhook_events, webhook_deliveries, webhook_attempts);

diesel::table! {
    consent_sessions (id) {
        id -> Text,
        application_id -> Text,
        client_id -> Text,
        environment -> Text,
        recipient -> Text,
        intent -> Text,
        transaction_type -> Text,
        transaction_description -> Text,
        amount_minor -> BigInt,
        currency -> Text,
        payee -> Text,
        callback_url -> Text,
        status -> Text,
        created_at -> BigInt,
        expires_at -> BigInt,
        decided_at -> Nullable<BigInt>,
    }
}

diesel::table! {
    end_users (id) {
        id -> Text,
        phone -> Text,
        handle -> Text,
        name -> Nullable<Text>,
        enrolled_at -> Nullable<BigInt>,
        created_at -> BigInt,
    }
}

diesel::table! {
    enrollments (id) {
        id -> Text,
        phone -> Text,
        name -> Nullable<Text>,
        device_name -> Nullable<Text>,
        platform -> Nullable<Text>,
        installation -> Text,
        application_id -> Nullable<Text>,
        environment -> Nullable<Text>,
        callback_url -> Nullable<Text>,
        status -> Text,
        otp_hash -> Text,
        otp_attempts_left -> Integer,
        otp_expires_at -> BigInt,
        device_id -> Nullable<Text>,
        created_at -> BigInt,
        updated_at -> BigInt,
    }
}

diesel::table! {
    devices (id) {
        id -> Text,
        user_id -> Text,
        name -> Text,
        platform -> Text,
        installation -> Text,
        application_id -> Nullable<Text>,
        environment -> Nullable<Text>,
        callback_url -> Nullable<Text>,
        status -> Text,
        credential_id -> Text,
        passkey -> Text,
        created_at -> BigInt,
        last_used_at -> Nullable<BigInt>,
        sign_count -> BigInt,
        recovery_ends_at -> Nullable<BigInt>,
    }
}

diesel::table! {
    fido_challenges (id) {
        id -> Text,
        purpose_type -> Text,
        purpose_id -> Nullable<Text>,
        phone -> Text,
        enrollment_id -> Nullable<Text>,
        state -> Text,
        context_hash -> Nullable<Text>,
        expires_at -> BigInt,
        used_at -> Nullable<BigInt>,
        created_at -> BigInt,
    }
}

diesel::table! {
    refresh_tokens (hash) {
        hash -> Text,
        family -> Text,
        user_id -> Text,
        device_id -> Text,
        installation -> Text,
        expires_at -> BigInt,
        used_at -> Nullable<BigInt>,
        revoked_at -> Nullable<BigInt>,
        created_at -> BigInt,
    }
}

diesel::table! {
    oauth_requests (session_id) {
        session_id -> Text,
        application_id -> Text,
        client_id -> Text,
        environment -> Text,
        redirect_uri -> Text,
        code_challenge -> Text,
        code_challenge_method -> Text,
        claims -> Text,
        scopes -> Text,
        state -> Nullable<Text>,
        description -> Nullable<Text>,
        created_at -> BigInt,
    }
}

diesel::table! {
    oauth_grants (code_id) {
        code_id -> Text,
        code_hash -> Text,
        sealed_code -> Text,
        session_id -> Text,
        application_id -> Text,
        redirect_uri -> Text,
        code_challenge -> Text,
        code_challenge_method -> Text,
        subject -> Text,
        scopes -> Text,
        claims -> Text,
        state -> Nullable<Text>,
        approved_at -> BigInt,
        expires_at -> BigInt,
        consumed_at -> Nullable<BigInt>,
        token_id -> Nullable<Text>,
    }
}

diesel::table! {
    oauth_tokens (token_id) {
        token_id -> Text,
        application_id -> Text,
        client_id -> Text,
        environment -> Text,
        subject -> Text,
        scopes -> Text,
        claims -> Text,
        issued_at -> BigInt,
        expires_at -> BigInt,
        revoked_at -> Nullable<BigInt>,
    }
}

// The token exchange reads a grant with its session's state in one statement.
diesel::allow_tables_to_appear_in_same_query!(oauth_grants, consent_sessions);

diesel::table! {
    qr_codes (id) {
        id -> Text,
        application_id -> Text,
        environment -> Text,
        data -> Text,
        format -> Text,
        size -> Integer,
        error_correction -> Text,
        created_at -> BigInt,
        expires_at -> BigInt,
    }
}

pub use crate::billing::schema::{api_calls, billing_plans, invoices, rate_budgets};
pub use crate::chip_challenges::schema::chip_challenges;
pub use crate::hosted::schema::hosted_confirmations;
pub use crate::mandate::schema::mandates;
pub use crate::oauth_keys::schema::oauth_signing_keys;
pub use crate::oidc::schema::{oidc_authorizations, oidc_clients, oidc_refresh_tokens};
pub use crate::signature::schema::signature_requests;
pub use crate::throttle::schema::throttle_counters;
pub use crate::usage::schema::usage_counters;
pub use crate::verification::schema::{identity_sandbox_days, identity_verifications};

diesel::table! {
    blob_objects (key) {
        key -> Text,
        size -> BigInt,
        chunks -> Integer,
        stored_at -> BigInt,
    }
}

diesel::table! {
    blob_chunks (blob_key, seq) {
        blob_key -> Text,
        seq -> Integer,
        bytes -> Binary,
    }
}
