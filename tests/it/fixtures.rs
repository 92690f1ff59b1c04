//! Test data written through the entities into the test's real database,
//! using the service's own derivations (folding, URL normalization, category
//! keys), with defaults so each test states only what it is about.

use chrono::{DateTime, TimeDelta, Utc};
use entity::{
    Marketplace, StringList, SubmissionStatus, SubscriptionStatus, TrustStatus, UserAuthStatus,
    brand_snapshot, category_snapshot, current_price, price_observation, product,
    product_translation, scrape_session, seller, special_price, submission, webhook_subscription,
};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, DatabaseConnection, EntityTrait, IntoActiveModel, NotSet,
};
use serde_json::json;
use uuid::Uuid;
use vitrina::text::{self, SearchKeys};

use crate::helpers::test_start;

pub fn seller(marketplace: Marketplace, seller_id: &str) -> seller::Model {
    seller::Model {
        id: Uuid::new_v4(),
        marketplace,
        seller_id: seller_id.into(),
        name: format!("Seller {seller_id}"),
        tin: "7700000000".into(),
        psrn: "1027700000000".into(),
        address: "г. Москва, ул. Ленина, д. 1".into(),
        url: Some(format!("https://shop.example/{seller_id}")),
        rating: 4.5,
        reg_date: chrono::NaiveDate::from_ymd_opt(2020, 1, 2),
        items_sold: 100,
        reviews_count: 10,
        first_seen_at: test_start() - TimeDelta::days(100),
        last_seen_at: test_start() - TimeDelta::days(1),
    }
}

pub async fn insert_seller(db: &DatabaseConnection, s: seller::Model) -> seller::Model {
    s.into_active_model()
        .reset_all()
        .insert(db)
        .await
        .expect("insert seller")
}

/// A product to insert; `product()` gives the defaults.
#[derive(Clone)]
pub struct ProductSpec {
    pub marketplace: Marketplace,
    pub external_id: String,
    pub url: String,
    pub name: String,
    pub brand: String,
    pub category_path: Vec<String>,
    pub seller_code: String,
    pub trust_status: TrustStatus,
    pub first_seen_at: DateTime<Utc>,
    pub video_cover: Option<String>,
    /// (language, name, category path)
    pub translations: Vec<(String, String, Vec<String>)>,
}

pub fn product(external_id: &str) -> ProductSpec {
    ProductSpec {
        marketplace: Marketplace::Wildberries,
        external_id: external_id.into(),
        url: format!("https://www.wildberries.ru/catalog/{external_id}/detail.aspx"),
        name: format!("Товар {external_id}"),
        brand: "Acme".into(),
        category_path: vec!["Электроника".into(), "Наушники".into()],
        seller_code: format!("SC-{external_id}"),
        trust_status: TrustStatus::Unverified,
        first_seen_at: test_start() - TimeDelta::days(10),
        video_cover: None,
        translations: vec![],
    }
}

pub fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

/// Inserts the product with its translations and category index rows.
pub async fn insert_product(
    db: &DatabaseConnection,
    seller: &seller::Model,
    spec: ProductSpec,
) -> product::Model {
    let id = Uuid::new_v4();
    let languages = std::iter::once((spec.name.as_str(), spec.category_path.as_slice())).chain(
        spec.translations
            .iter()
            .map(|(_, name, path)| (name.as_str(), path.as_slice())),
    );
    let keys = SearchKeys::of(&spec.brand, &spec.seller_code, languages);
    let categories = keys.category_rows(id, spec.first_seen_at);
    let model = product::Model {
        id,
        marketplace: spec.marketplace,
        external_id: spec.external_id.clone(),
        url: text::normalize_url(&spec.url),
        name: spec.name.clone(),
        brand_key: keys.brand_key,
        brand: spec.brand.clone(),
        category_path: StringList(spec.category_path.clone()),
        attributes: json!({ "цвет": "чёрный", "original": true }),
        image_cover: format!("https://img.example/{}.webp", spec.external_id),
        image_gallery: StringList(vec![format!(
            "https://img.example/{}.webp",
            spec.external_id
        )]),
        video_cover: spec.video_cover.clone(),
        video_gallery: StringList(vec![]),
        seller_ref: seller.id,
        seller_code_key: keys.seller_code_key,
        seller_code: spec.seller_code.clone(),
        name_search: keys.name_search,
        trust_status: spec.trust_status,
        price_flagged: false,
        stats: None,
        first_seen_language: "ru".into(),
        default_language: "ru".into(),
        first_seen_at: spec.first_seen_at,
        last_seen_at: spec.first_seen_at + TimeDelta::days(1),
        stored_size: 0,
    };
    model
        .into_active_model()
        .reset_all()
        .insert(db)
        .await
        .expect("insert product");
    for row in categories {
        row.insert(db).await.expect("insert category key");
    }
    for (language, name, path) in spec.translations {
        product_translation::ActiveModel {
            product_id: Set(id),
            language: Set(language),
            name: Set(name),
            category_path: Set(StringList(path)),
            attributes: Set(json!({ "color": "black" })),
            updated_at: Set(spec.first_seen_at),
        }
        .insert(db)
        .await
        .expect("insert translation");
    }
    // Measured as the merge measures what it writes (prices inserted later
    // are not in it, as if written after the last merge).
    vitrina::jobs::merge::size::record_all(db, &[id])
        .await
        .expect("measure product");
    product::Entity::find_by_id(id)
        .one(db)
        .await
        .expect("read product")
        .expect("the product")
}

/// A price observation of a product (also its current price when `current`).
#[derive(Clone)]
pub struct Observation {
    pub country_code: &'static str,
    pub region_code: Option<&'static str>,
    pub user_auth_status: UserAuthStatus,
    pub price: f64,
    pub recorded_at: DateTime<Utc>,
}

pub fn observation(price: f64, recorded_at: DateTime<Utc>) -> Observation {
    Observation {
        country_code: "ru",
        region_code: None,
        user_auth_status: UserAuthStatus::Anonymous,
        price,
        recorded_at,
    }
}

pub async fn insert_observation(
    db: &DatabaseConnection,
    product_id: Uuid,
    o: Observation,
) -> price_observation::Model {
    price_observation::ActiveModel {
        id: NotSet,
        product_id: Set(product_id),
        country_code: Set(o.country_code.into()),
        region_code: Set(o.region_code.map(Into::into)),
        user_auth_status: Set(o.user_auth_status),
        price: Set(o.price),
        old_price: Set(o.price * 1.2),
        currency: Set("RUB".into()),
        stock_status: Set(Some("in_stock".into())),
        stock_quantity: Set(Some(5)),
        recorded_at: Set(o.recorded_at),
    }
    .insert(db)
    .await
    .expect("insert observation")
}

pub async fn insert_current_price(db: &DatabaseConnection, product_id: Uuid, o: Observation) {
    current_price::ActiveModel {
        id: NotSet,
        product_id: Set(product_id),
        country_code: Set(o.country_code.into()),
        region_code: Set(o.region_code.map(Into::into)),
        user_auth_status: Set(o.user_auth_status),
        price: Set(o.price),
        old_price: Set(o.price * 1.2),
        currency: Set("RUB".into()),
        stock_status: Set(None),
        stock_quantity: Set(None),
        recorded_at: Set(o.recorded_at),
    }
    .insert(db)
    .await
    .expect("insert current price");
}

pub async fn insert_special_price(db: &DatabaseConnection, product_id: Uuid, region_code: &str) {
    special_price::ActiveModel {
        id: NotSet,
        product_id: Set(product_id),
        country_code: Set("ru".into()),
        region_code: Set(region_code.into()),
        user_auth_status: Set(UserAuthStatus::Anonymous),
        min: Set(90.0),
        max: Set(100.0),
    }
    .insert(db)
    .await
    .expect("insert special price");
}

/// A scrape session of the account owning `key_secret`'s key.
pub async fn insert_session(
    db: &DatabaseConnection,
    key_secret: &str,
    created_at: DateTime<Utc>,
) -> scrape_session::Model {
    let caller = vitrina::accounts::authenticate(db, key_secret, created_at)
        .await
        .unwrap()
        .expect("valid key");
    scrape_session::ActiveModel {
        id: Set(Uuid::new_v4()),
        account_id: Set(caller.account_id),
        api_key_id: Set(caller.key_id),
        source_type: Set("page".into()),
        intent: Set("price_monitoring".into()),
        url_count: Set(1),
        idempotency_key: Set(None),
        request_fingerprint: Set(None),
        completed_at: Set(None),
        created_at: Set(created_at),
        updated_at: Set(created_at),
    }
    .insert(db)
    .await
    .expect("insert session")
}

/// A webhook subscription of `account_id` to finished sessions (the
/// default events), written as it is stored, whatever its target.
pub async fn insert_subscription(
    db: &DatabaseConnection,
    account_id: Uuid,
    target_url: &str,
    status: SubscriptionStatus,
    created_at: DateTime<Utc>,
) -> Uuid {
    let id = Uuid::new_v4();
    webhook_subscription::ActiveModel {
        id: Set(id),
        account_id: Set(account_id),
        target_url: Set(target_url.into()),
        secret: Set("whsec_test".into()),
        previous_secret: Set(None),
        previous_secret_expires_at: Set(None),
        status: Set(status),
        consecutive_failures: Set(0),
        created_at: Set(created_at),
        disabled_at: Set(None),
        session_events: Set(true),
        price_events: Set(false),
        price_filter: Set(None),
    }
    .insert(db)
    .await
    .expect("insert subscription");
    id
}

pub async fn insert_submission(
    db: &DatabaseConnection,
    session_id: Uuid,
    status: SubmissionStatus,
    product_id: Option<Uuid>,
) -> submission::Model {
    submission::ActiveModel {
        id: NotSet,
        session_id: Set(session_id),
        status: Set(status),
        payload: Set(json!({ "external_id": "x" })),
        product_id: Set(product_id),
        reason: Set(None),
        lease_expires_at: Set(None),
        created_at: Set(test_start()),
        updated_at: Set(test_start()),
    }
    .insert(db)
    .await
    .expect("insert submission")
}

pub async fn insert_category_snapshot(
    db: &DatabaseConnection,
    day: chrono::NaiveDate,
    marketplace: Marketplace,
    path: &[&str],
    count: i64,
) {
    category_snapshot::ActiveModel {
        id: NotSet,
        snapshot_date: Set(day),
        marketplace: Set(marketplace),
        category_path: Set(StringList(strings(path))),
        product_count: Set(count),
    }
    .insert(db)
    .await
    .expect("insert category snapshot");
}

pub async fn insert_brand_snapshot(
    db: &DatabaseConnection,
    day: chrono::NaiveDate,
    marketplace: Option<Marketplace>,
    brand: &str,
    count: i64,
) {
    brand_snapshot::ActiveModel {
        id: NotSet,
        snapshot_date: Set(day),
        marketplace: Set(marketplace),
        brand: Set(brand.into()),
        product_count: Set(count),
    }
    .insert(db)
    .await
    .expect("insert brand snapshot");
}
