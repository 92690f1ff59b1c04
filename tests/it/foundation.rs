//! Foundation: migrations, keys, the demo dataset, health probes.

use std::collections::{BTreeSet, HashMap};

use entity::{
    Marketplace, SubmissionStatus, TrustStatus, price_observation, product, product_category,
    product_translation, seller, submission,
};
use migration::{Migrator, MigratorTrait};
use sea_orm::{DatabaseConnection, EntityTrait, PaginatorTrait, QueryOrder};
use vitrina::clock::Clock;
use vitrina::seed::{self, SeedOptions};

use crate::fixtures;
use crate::helpers::{TestApp, TestDb, migrate_down_through};

#[tokio::test]
async fn migrations_apply_and_are_rerunnable() {
    let test_db = TestDb::new().await;
    let db = test_db.connect().await;
    vitrina::db::migrate(&db)
        .await
        .expect("second run is a no-op");
    assert!(
        Migrator::get_pending_migrations(&db)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(product::Entity::find().count(&db).await.unwrap(), 0);
}

#[tokio::test]
async fn migrations_roll_back_and_apply_again() {
    let test_db = TestDb::new().await;
    let db = test_db.connect().await;
    Migrator::down(&db, None).await.expect("down");
    assert!(
        product::Entity::find().count(&db).await.is_err(),
        "tables are gone"
    );
    vitrina::db::migrate(&db).await.expect("up again");
    assert_eq!(product::Entity::find().count(&db).await.unwrap(), 0);
}

#[tokio::test]
async fn category_rows_of_existing_products_get_their_first_sighting_when_migrated() {
    let test_db = TestDb::new().await;
    let db = test_db.connect().await;
    let options = SeedOptions {
        demo: false,
        products: 30,
        seed: 3,
    };
    seed::seed(&db, &options).await.expect("seed");
    // Back to the schema before the column, data kept, then forward again.
    migrate_down_through(&db, "m20261123_000003_category_newest").await;
    vitrina::db::migrate(&db).await.expect("up");

    let products: HashMap<_, _> = product::Entity::find()
        .all(&db)
        .await
        .unwrap()
        .into_iter()
        .map(|p| (p.id, p.first_seen_at))
        .collect();
    let rows = product_category::Entity::find().all(&db).await.unwrap();
    assert!(rows.len() >= products.len(), "every product has categories");
    for row in rows {
        assert_eq!(Some(&row.first_seen_at), products.get(&row.product_id));
    }
}

#[tokio::test]
async fn keys_are_stored_hashed_and_revocation_stops_them() {
    let app = TestApp::spawn().await;
    let now = app.clock.now();
    let new = vitrina::accounts::create_key(&app.db, "acme", now)
        .await
        .unwrap();
    assert!(new.secret.starts_with("vtr_") && new.secret.len() == 52);
    assert_ne!(new.key.key_hash, new.secret, "only the hash is stored");
    assert_eq!(new.key.key_hash, vitrina::accounts::hash_key(&new.secret));
    assert!(new.secret.starts_with(&new.key.prefix));

    let caller = vitrina::accounts::authenticate(&app.db, &new.secret, now)
        .await
        .unwrap();
    assert_eq!(caller.map(|c| c.key_id), Some(new.key.id));
    assert!(
        vitrina::accounts::authenticate(&app.db, "vtr_wrong", now)
            .await
            .unwrap()
            .is_none()
    );

    vitrina::accounts::revoke_key(&app.db, new.key.id, now)
        .await
        .unwrap();
    assert!(
        vitrina::accounts::authenticate(&app.db, &new.secret, now)
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn health_and_readiness_answer() {
    let app = TestApp::spawn().await;
    let health = app.get("/healthz").await;
    assert_eq!(health.status(), 200);
    assert_eq!(
        health.json::<serde_json::Value>().await.unwrap()["status"],
        "ok"
    );
    let ready = app.get("/readyz").await;
    assert_eq!(ready.status(), 200);
    assert_eq!(
        ready.json::<serde_json::Value>().await.unwrap()["status"],
        "ready"
    );
}

/// Everything the generator wrote that must not depend on the run.
async fn dump(
    db: &DatabaseConnection,
) -> (
    Vec<product::Model>,
    Vec<seller::Model>,
    Vec<price_observation::Model>,
    Vec<product_translation::Model>,
) {
    (
        product::Entity::find()
            .order_by_asc(product::Column::Id)
            .all(db)
            .await
            .unwrap(),
        seller::Entity::find()
            .order_by_asc(seller::Column::Id)
            .all(db)
            .await
            .unwrap(),
        price_observation::Entity::find()
            .order_by_asc(price_observation::Column::Id)
            .all(db)
            .await
            .unwrap(),
        product_translation::Entity::find()
            .order_by_asc(product_translation::Column::ProductId)
            .order_by_asc(product_translation::Column::Language)
            .all(db)
            .await
            .unwrap(),
    )
}

#[tokio::test]
async fn demo_seeding_is_deterministic() {
    let options = SeedOptions {
        demo: true,
        products: 1500,
        seed: 7,
    };
    let (a, b, c) = (
        TestDb::new().await,
        TestDb::new().await,
        TestDb::new().await,
    );
    let (a, b, c) = (a.connect().await, b.connect().await, c.connect().await);
    seed::seed(&a, &options).await.unwrap();
    seed::seed(&b, &options).await.unwrap();
    seed::seed(
        &c,
        &SeedOptions {
            seed: 8,
            ..options.clone()
        },
    )
    .await
    .unwrap();
    let first = dump(&a).await;
    assert_eq!(first.0.len(), 1500, "spans two insert batches");
    assert_eq!(first, dump(&b).await, "same seed, same data");
    assert_ne!(first.0, dump(&c).await.0, "another seed, other data");
}

#[tokio::test]
async fn seeding_refuses_a_database_that_holds_products() {
    let test_db = TestDb::new().await;
    let db = test_db.connect().await;
    let options = SeedOptions {
        demo: false,
        products: 10,
        seed: 1,
    };
    seed::seed(&db, &options).await.unwrap();
    let err = seed::seed(&db, &options).await.unwrap_err();
    assert!(err.to_string().contains("empty database"), "{err}");
    assert_eq!(product::Entity::find().count(&db).await.unwrap(), 10);
}

#[tokio::test]
async fn seeding_refuses_a_catalog_of_sellers_alone_and_keeps_them() {
    let test_db = TestDb::new().await;
    let db = test_db.connect().await;
    fixtures::insert_seller(&db, fixtures::seller(Marketplace::Ozon, "s-1")).await;
    assert!(!seed::is_empty(&db).await.unwrap());
    let options = SeedOptions {
        demo: false,
        products: 10,
        seed: 1,
    };
    let err = seed::seed(&db, &options).await.unwrap_err();
    assert!(err.to_string().contains("sellers not empty"), "{err}");
    assert_eq!(seller::Entity::find().count(&db).await.unwrap(), 1);
    assert_eq!(product::Entity::find().count(&db).await.unwrap(), 0);
}

#[tokio::test]
async fn demo_dataset_covers_what_the_spec_describes() {
    let test_db = TestDb::new().await;
    let db = test_db.connect().await;
    let report = seed::seed(&db, &SeedOptions::demo()).await.unwrap();
    assert!(report.demo_key.is_some());

    let products = product::Entity::find().all(&db).await.unwrap();
    let marketplaces: BTreeSet<_> = products.iter().map(|p| p.marketplace.as_str()).collect();
    assert_eq!(marketplaces.len(), Marketplace::ALL.len());
    let statuses: BTreeSet<_> = products.iter().map(|p| p.trust_status.as_str()).collect();
    assert_eq!(statuses.len(), TrustStatus::ALL.len());
    assert!(
        products.iter().any(|p| p.category_path.0.is_empty()),
        "an empty category path"
    );
    assert!(
        products.iter().any(|p| p.category_path.0.len() >= 3),
        "multi-level paths"
    );
    assert!(products.iter().any(|p| {
        p.brand
            .chars()
            .any(|c| ('а'..='я').contains(&c.to_ascii_lowercase()) || ('А'..='Я').contains(&c))
    }));
    assert!(products.iter().any(|p| p.brand.is_ascii()));

    let languages: BTreeSet<_> = product_translation::Entity::find()
        .all(&db)
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.language)
        .collect();
    assert!(
        languages.contains("en") && languages.contains("kk"),
        "{languages:?}"
    );

    let sellers = seller::Entity::find().all(&db).await.unwrap();
    assert!(
        sellers
            .iter()
            .all(|s| matches!(s.tin.len(), 10 | 12) && matches!(s.psrn.len(), 13 | 15))
    );
    let mut marketplaces_by_tin: HashMap<&str, BTreeSet<&str>> = HashMap::new();
    for s in &sellers {
        marketplaces_by_tin
            .entry(&s.tin)
            .or_default()
            .insert(s.marketplace.as_str());
    }
    assert!(
        marketplaces_by_tin.values().any(|m| m.len() > 1),
        "one TIN on several marketplaces"
    );

    let observations = price_observation::Entity::find().all(&db).await.unwrap();
    let variants: BTreeSet<_> = observations
        .iter()
        .map(|o| {
            (
                o.country_code.clone(),
                o.region_code.clone(),
                o.user_auth_status,
            )
        })
        .collect();
    assert!(variants.len() >= 5, "several country/region/auth variants");
    let span = observations.iter().map(|o| o.recorded_at).max().unwrap()
        - observations.iter().map(|o| o.recorded_at).min().unwrap();
    assert!(span.num_days() > 90, "history over months");

    let submission_statuses: BTreeSet<_> = submission::Entity::find()
        .all(&db)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.status)
        .collect();
    assert_eq!(
        submission_statuses.len(),
        SubmissionStatus::ALL.len(),
        "every submission status"
    );
}
