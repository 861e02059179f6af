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
