//! One handler served, and documented, at several paths: each step of the hosted page at
//! `/approve/{kind}/{id}…` and at today's page URLs (`/mandates/{id}…`, where the kind is the
//! alias's). The OpenAPI operation is written once, for the generic path; an alias documents
//! the same operation under its own path, without the `kind` parameter.

use actix_web::dev::{AppService, HttpServiceFactory, Payload};
use actix_web::{FromRequest, HttpRequest, Route, web};
use idconsent_approval::PurposeKind;
use serde::Deserialize;
use utoipa::openapi::path::{Operation, Paths};
use utoipa_actix_web::OpenApiFactory;

use crate::http::error::ApiError;

/// A handler (`route`) at `path`, documented by the operation of `doc` (a `#[utoipa::path]`
/// of the generic path).
pub struct At<D> {
    path: String,
    kind: Option<PurposeKind>,
    route: Route,
    doc: D,
}

impl<D> At<D> {
    /// `kind`: the alias's kind; `None` for the generic path, whose `{kind}` names it.
    pub fn new(path: String, kind: Option<PurposeKind>, route: Route, doc: D) -> Self {
        Self {
            path,
            kind,
            route,
            doc,
        }
    }
}

/// The kind of the page an alias serves (resource data).
#[derive(Debug, Clone)]
struct AliasKind(PurposeKind);

impl<D> HttpServiceFactory for At<D> {
    fn register(self, config: &mut AppService) {
        let mut resource = web::resource(self.path).route(self.route);
        if let Some(kind) = self.kind {
            resource = resource.app_data(AliasKind(kind));
        }
        resource.register(config);
    }
}

impl<D: OpenApiFactory> OpenApiFactory for At<D> {
    fn paths(&self) -> Paths {
        let mut paths = Paths::new();
        for (_, mut item) in self.doc.paths().paths {
            if self.kind.is_some() {
                for operation in [&mut item.get, &mut item.post].into_iter().flatten() {
                    without_kind(operation);
                }
            }
            paths.paths.insert(self.path.clone(), item);
        }
        paths
    }

    fn schemas(
        &self,
        schemas: &mut Vec<(
            String,
            utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
        )>,
    ) {
        self.doc.schemas(schemas);
    }
}

fn without_kind(operation: &mut Operation) {
    if let Some(parameters) = &mut operation.parameters {
        parameters.retain(|parameter| {
            !matches!(parameter, utoipa::openapi::RefOr::T(parameter) if parameter.name == "kind")
        });
    }
}

/// Which page a request is on: the kind (from the alias, else the path's `{kind}`) and the
/// page's id.
#[derive(Debug, Clone)]
pub struct PageAt {
    pub kind: PurposeKind,
    pub id: String,
}

#[derive(Deserialize)]
struct PageParams {
    kind: Option<String>,
    id: String,
}

impl FromRequest for PageAt {
    type Error = ApiError;
    type Future = std::future::Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        std::future::ready(page_at(req))
    }
}

fn page_at(req: &HttpRequest) -> Result<PageAt, ApiError> {
    let not_found = || ApiError::not_found("Not found");
    let params = web::Path::<PageParams>::extract(req)
        .into_inner()
        .map_err(|_| not_found())?
        .into_inner();
    let kind = match (req.app_data::<AliasKind>(), params.kind) {
        (Some(alias), _) => alias.0.clone(),
        (None, Some(kind)) => PurposeKind::named(&kind).map_err(|_| not_found())?,
        (None, None) => return Err(not_found()),
    };
    Ok(PageAt {
        kind,
        id: params.id,
    })
}
