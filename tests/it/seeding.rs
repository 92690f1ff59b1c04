//! `vitrina seed` as a bulk load: the same rows for the same seed in every
//! table, ids that never collide, sizes as the merge measures them, the
//! schema as migrated afterwards, and a run killed part-way leaves the
//! database as it was.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use entity::{
    SubmissionStatus, brand_snapshot, category_snapshot, current_price, price_observation, product,
    product_category, product_translation, seller, special_price, submission,
};
use sea_orm::{
    ConnectionTrait, DatabaseConnection, DbBackend, EntityTrait, Iterable, PaginatorTrait,
    PrimaryKeyToColumn, QueryOrder, Statement,
};
use vitrina::seed::{self, SeedOptions};

use crate::helpers::TestDb;
use crate::helpers::cli::{stderr, vitrina};

/// More products than one generated batch holds.
const TWO_BATCHES: u64 = 6_000;

async fn seeded(options: &SeedOptions) -> (TestDb, DatabaseConnection) {
    let test_db = TestDb::new().await;
    let db = test_db.connect().await;
    seed::seed(&db, options).await.expect("seed");
    (test_db, db)
}

/// Every row of `E`, in primary-key order.
async fn rows<E: EntityTrait>(db: &DatabaseConnection) -> Vec<E::Model> {
    let mut select = E::find();
    for key in E::PrimaryKey::iter() {
        select = select.order_by_asc(key.into_column());
    }
    select.all(db).await.expect("read rows")
}

async fn assert_same_rows<E: EntityTrait>(a: &DatabaseConnection, b: &DatabaseConnection)
where
    E::Model: PartialEq + std::fmt::Debug,
{
    let (a, b) = (rows::<E>(a).await, rows::<E>(b).await);
    let table = E::default().table_name();
    assert!(!a.is_empty(), "{table} has rows");
    assert!(a == b, "{table} differs between two runs of one seed");
}

#[tokio::test]
async fn the_same_seed_gives_the_same_rows_in_every_table() {
    let options = SeedOptions {
        demo: true,
        products: TWO_BATCHES,
        seed: 3,
    };
    let ((_a, a), (_b, b)) = (seeded(&options).await, seeded(&options).await);
    assert_same_rows::<seller::Entity>(&a, &b).await;
    assert_same_rows::<product::Entity>(&a, &b).await;
    assert_same_rows::<product_translation::Entity>(&a, &b).await;
    assert_same_rows::<product_category::Entity>(&a, &b).await;
    assert_same_rows::<price_observation::Entity>(&a, &b).await;
    assert_same_rows::<current_price::Entity>(&a, &b).await;
    assert_same_rows::<special_price::Entity>(&a, &b).await;
    assert_same_rows::<category_snapshot::Entity>(&a, &b).await;
    assert_same_rows::<brand_snapshot::Entity>(&a, &b).await;
    assert_same_rows::<submission::Entity>(&a, &b).await;
    assert_eq!(
        product::Entity::find().count(&a).await.unwrap(),
        TWO_BATCHES
    );
}

#[tokio::test]
async fn seeds_give_different_ids_and_none_collide() {
    let options = |seed| SeedOptions {
        demo: true,
        products: TWO_BATCHES,
        seed,
    };
    let ((_a, a), (_b, b)) = (seeded(&options(3)).await, seeded(&options(4)).await);
    let external_ids = |products: Vec<product::Model>| -> BTreeSet<String> {
        products.into_iter().map(|p| p.external_id).collect()
    };
    let (of_a, of_b) = (
        external_ids(rows::<product::Entity>(&a).await),
        external_ids(rows::<product::Entity>(&b).await),
    );
    assert_eq!(
        of_a.len() as u64,
        TWO_BATCHES,
        "distinct across marketplaces"
    );
    assert!(of_a.iter().all(|id| id.len() == 9));
    assert_ne!(of_a, of_b);
    // The demo's items not merged yet name products the catalog lacks.
    let pending: Vec<String> = rows::<submission::Entity>(&a)
        .await
        .into_iter()
        .filter(|s| {
            matches!(
                s.status,
                SubmissionStatus::Pending | SubmissionStatus::Processing
            )
        })
        .filter_map(|s| s.payload["external_id"].as_str().map(str::to_owned))
        .collect();
    assert!(!pending.is_empty());
    assert!(pending.iter().all(|id| !of_a.contains(id)), "{pending:?}");
}

#[tokio::test]
async fn seeded_sizes_are_what_the_merge_measures() {
    let (_db, db) = seeded(&SeedOptions {
        demo: false,
        products: 300,
        seed: 5,
    })
    .await;
    let sizes = |products: Vec<product::Model>| -> Vec<(uuid::Uuid, i64)> {
        products
            .into_iter()
            .map(|p| (p.id, p.stored_size))
            .collect()
    };
    let seeded = sizes(rows::<product::Entity>(&db).await);
    assert!(seeded.iter().all(|(_, size)| *size > 0));
    let ids: Vec<uuid::Uuid> = seeded.iter().map(|(id, _)| *id).collect();
    vitrina::jobs::merge::size::record_all(&db, &ids)
        .await
        .expect("measure");
    assert_eq!(seeded, sizes(rows::<product::Entity>(&db).await));
}

/// Every index, constraint, trigger and table definition, as the database
/// states it; on PostgreSQL each trigger with whether it fires (the seed
/// turns the loaded tables' off while it loads).
async fn schema(db: &DatabaseConnection) -> Vec<String> {
    let sql = match db.get_database_backend() {
        DbBackend::Postgres => {
            "SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema()
             UNION ALL
             SELECT conrelid::regclass || ' ' || conname || ' ' || pg_get_constraintdef(oid)
                    || CASE WHEN convalidated THEN '' ELSE ' NOT VALIDATED' END
             FROM pg_constraint WHERE connamespace = current_schema()::regnamespace
             UNION ALL
             SELECT pg_get_triggerdef(oid) || ' ' || tgenabled::text
             FROM pg_trigger WHERE NOT tgisinternal
             ORDER BY 1"
        }
        _ => {
            "SELECT type || ' ' || name || ' ' || coalesce(sql, '') FROM sqlite_master
             WHERE name NOT LIKE 'sqlite_stat%' ORDER BY 1"
        }
    };
    let rows = db
        .query_all_raw(Statement::from_string(db.get_database_backend(), sql))
        .await
        .expect("read the schema");
    rows.iter()
        .map(|row| row.try_get_by_index::<String>(0).expect("text"))
        .collect()
}

async fn migrated() -> (TestDb, DatabaseConnection) {
    let test_db = TestDb::new().await;
    let db = test_db.connect().await;
    (test_db, db)
}

#[tokio::test]
async fn seeding_leaves_the_schema_as_migrated() {
    let (_fresh, fresh) = migrated().await;
    let (_db, db) = seeded(&SeedOptions {
        demo: true,
        products: 500,
        seed: 1,
    })
    .await;
    let expected = schema(&fresh).await;
    assert!(
        expected
            .iter()
            .any(|d| d.contains("products_marketplace_external_id"))
    );
    assert!(expected.iter().any(|d| d.contains("brand_counts_insert")));
    assert_eq!(schema(&db).await, expected);
    if db.get_database_backend() == DbBackend::Sqlite {
        let broken = db
            .query_all_raw(Statement::from_string(
                DbBackend::Sqlite,
                "PRAGMA foreign_key_check",
            ))
            .await
            .unwrap();
        assert!(broken.is_empty(), "every reference has its row");
    }
}

#[tokio::test]
async fn a_seed_killed_part_way_leaves_the_database_as_it_was() {
    let (test_db, db) = migrated().await;
    let expected = schema(&db).await;
    let mut child = Command::new(env!("CARGO_BIN_EXE_vitrina"))
        .args(["seed", "--products", "100000"])
        .env("DATABASE_URL", &test_db.url)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start vitrina seed");
    let (line, lines) = mpsc::channel();
    let progress = child.stderr.take().expect("stderr");
    std::thread::spawn(move || {
        for text in BufReader::new(progress).lines().map_while(Result::ok) {
            let _ = line.send(text);
        }
    });
    // The first line comes once a tenth of the products is written.
    let first = lines
        .recv_timeout(Duration::from_secs(300))
        .expect("a progress line");
    assert!(first.contains("of 100000 products"), "{first}");
    child.kill().expect("kill");
    child.wait().expect("wait");

    assert_eq!(product::Entity::find().count(&db).await.unwrap(), 0);
    assert_eq!(seller::Entity::find().count(&db).await.unwrap(), 0);
    assert_eq!(schema(&db).await, expected);
    let again = seed::seed(
        &db,
        &SeedOptions {
            demo: false,
            products: 50,
            seed: 2,
        },
    )
    .await
    .expect("seed again");
    assert_eq!(again.products, 50);
}

#[tokio::test]
async fn seed_reports_progress_in_plain_lines_off_a_terminal() {
    let (test_db, _db) = migrated().await;
    let out = vitrina(&test_db.url, &["seed", "--products", "12000"]);
    assert!(out.status.success(), "{out:?}");
    let printed = stderr(&out);
    let lines: Vec<&str> = printed.lines().collect();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("seed: 12000 of 12000 products (100%), ")),
        "{printed}"
    );
    assert!(lines.contains(&"seed: building indexes"), "{printed}");
    assert!(!printed.contains('\r'), "no bar drawn: {printed:?}");
}
