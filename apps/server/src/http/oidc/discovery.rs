//! `GET /.well-known/openid-configuration`.

use actix_web::{HttpResponse, get, web};
use idconsent_oidc::OidcProvider;

/// The OpenID Provider metadata (OpenID Connect Discovery 1.0): issuer, endpoints and what
/// the provider supports.
#[utoipa::path(
    tag = "oidc",
    responses((status = 200, description = "Provider metadata", body = Object))
)]
#[get("/.well-known/openid-configuration")]
pub async fn openid_configuration(oidc: web::Data<OidcProvider>) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header(("Cache-Control", "public, max-age=300"))
        .json(oidc.metadata())
}
