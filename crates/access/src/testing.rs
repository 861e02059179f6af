//! Test support for gates: a signed caller without a database.

use idconsent_kernel::id::{ApplicationId, ClientId, MerchantId, TypedId};
use idconsent_kernel::{Environment, Sealed, Timestamp, WebUrl};
use idconsent_merchant::model::{Application, KeyRecord, RequestTypes};

use crate::Caller;

/// A caller of `application` (of `merchant`) in `environment`, as `ApiAccess::verify` would
/// give it: what a gate sees of a signed request.
pub fn caller(
    merchant: &MerchantId,
    application: &ApplicationId,
    environment: Environment,
) -> Caller {
    let sealed = || Sealed::from_stored("sealed".into());
    let epoch = Timestamp::from_millis(0);
    Caller {
        application: Application {
            id: application.clone(),
            merchant_id: merchant.clone(),
            client_id: ClientId::from_trusted(format!("cli_{}", application.as_str())),
            name: "Checkout".into(),
            callback_url: WebUrl::parse("https://shop.example/hooks")
                .unwrap_or_else(|_| unreachable!("a valid URL")),
            redirect_uris: Vec::new(),
            request_types: RequestTypes::all(),
            sandbox_key: KeyRecord {
                sealed: sealed(),
                generated_at: epoch,
            },
            live_key: None,
            secret: sealed(),
            webhook_secret: sealed(),
            previous_webhook_secret: None,
            previous_secret: None,
            created_at: epoch,
            updated_at: epoch,
        },
        environment,
    }
}
