//! The whole data model of the first release.
//!
//! Tables are written with sea-query so the same definition serves SQLite and
//! PostgreSQL. PostgreSQL additionally gets trigram indexes for the substring
//! filters (`name_contains`, `seller_code_contains`); SQLite scans for those.

use sea_orm_migration::{prelude::*, schema::*, sea_orm::DbBackend};

#[derive(DeriveMigrationName)]
pub struct Migration;

fn fk(
    from: (&'static str, &'static str),
    to: (&'static str, &'static str),
) -> ForeignKeyCreateStatement {
    ForeignKey::create()
        .from(from.0, from.1)
        .to(to.0, to.1)
        .on_delete(ForeignKeyAction::Cascade)
        .to_owned()
}

fn index(table: &'static str, name: &'static str, cols: &[&'static str]) -> IndexCreateStatement {
    let mut stmt = Index::create();
    stmt.name(name).table(table);
    for col in cols {
        stmt.col(*col);
    }
    stmt.to_owned()
}

/// An index whose columns after the first are descending, matching a
/// "newest first" ordering.
fn index_desc(
    table: &'static str,
    name: &'static str,
    lead: &'static str,
    desc: &[&'static str],
) -> IndexCreateStatement {
    let mut stmt = Index::create();
    stmt.name(name).table(table).col(lead);
    for col in desc {
        stmt.col((*col, IndexOrder::Desc));
    }
    stmt.to_owned()
}

fn tables() -> Vec<TableCreateStatement> {
    vec![
        Table::create()
            .table("accounts")
            .col(pk_uuid("id"))
            .col(string_uniq("name"))
            .col(big_integer_null("daily_quota"))
            .col(timestamp_with_time_zone("created_at"))
            .to_owned(),
        Table::create()
            .table("api_keys")
            .col(pk_uuid("id"))
            .col(uuid("account_id"))
            .col(string_uniq("key_hash"))
            .col(string("prefix"))
            .col(timestamp_with_time_zone("created_at"))
            .col(timestamp_with_time_zone_null("revoked_at"))
            .col(timestamp_with_time_zone_null("last_used_at"))
            .foreign_key(&mut fk(("api_keys", "account_id"), ("accounts", "id")))
            .to_owned(),
        Table::create()
            .table("sellers")
            .col(pk_uuid("id"))
            .col(string("marketplace"))
            .col(string("seller_id"))
            .col(string("name"))
            .col(string("tin"))
            .col(string("psrn"))
            .col(string("address"))
            .col(string("url"))
            .col(double("rating"))
            .col(date_null("reg_date"))
            .col(big_integer("items_sold"))
            .col(big_integer("reviews_count"))
            .col(timestamp_with_time_zone("first_seen_at"))
            .col(timestamp_with_time_zone("last_seen_at"))
            .to_owned(),
        Table::create()
            .table("products")
            .col(pk_uuid("id"))
            .col(string("marketplace"))
            .col(string("external_id"))
            .col(string("url"))
            .col(string("name"))
            .col(string("brand"))
            .col(string("brand_key"))
            .col(json_binary("category_path"))
            .col(json_binary("attributes"))
            .col(string("image_cover"))
            .col(json_binary("image_gallery"))
            .col(string_null("video_cover"))
            .col(json_binary("video_gallery"))
            .col(uuid("seller_ref"))
            .col(string("seller_code"))
            .col(string("seller_code_key"))
            .col(text("name_search"))
            .col(string("trust_status"))
            .col(boolean("price_flagged"))
            .col(json_binary_null("stats"))
            .col(string("first_seen_language"))
            .col(string("default_language"))
            .col(timestamp_with_time_zone("first_seen_at"))
            .col(timestamp_with_time_zone("last_seen_at"))
            .foreign_key(&mut fk(("products", "seller_ref"), ("sellers", "id")))
            .to_owned(),
        Table::create()
            .table("product_translations")
            .col(uuid("product_id"))
            .col(string("language"))
            .col(string("name"))
            .col(json_binary("category_path"))
            .col(json_binary("attributes"))
            .col(timestamp_with_time_zone("updated_at"))
            .primary_key(Index::create().col("product_id").col("language"))
            .foreign_key(&mut fk(
                ("product_translations", "product_id"),
                ("products", "id"),
            ))
            .to_owned(),
        Table::create()
            .table("product_categories")
            .col(uuid("product_id"))
            .col(string("category_key"))
            .primary_key(Index::create().col("product_id").col("category_key"))
            .foreign_key(&mut fk(
                ("product_categories", "product_id"),
                ("products", "id"),
            ))
            .to_owned(),
        price_table("price_observations"),
        price_table("current_prices"),
        Table::create()
            .table("special_prices")
            .col(big_pk_auto("id"))
            .col(uuid("product_id"))
            .col(string("country_code"))
            .col(string("region_code"))
            .col(string("user_auth_status"))
            .col(double("min"))
            .col(double("max"))
            .foreign_key(&mut fk(
                ("special_prices", "product_id"),
                ("products", "id"),
            ))
            .to_owned(),
        Table::create()
            .table("scrape_sessions")
            .col(pk_uuid("id"))
            .col(uuid("account_id"))
            .col(uuid("api_key_id"))
            .col(string("source_type"))
            .col(string("intent"))
            .col(big_integer("url_count"))
            .col(string_null("idempotency_key"))
            .col(timestamp_with_time_zone_null("completed_at"))
            .col(timestamp_with_time_zone("created_at"))
            .col(timestamp_with_time_zone("updated_at"))
            .foreign_key(&mut fk(
                ("scrape_sessions", "account_id"),
                ("accounts", "id"),
            ))
            .foreign_key(&mut fk(
                ("scrape_sessions", "api_key_id"),
                ("api_keys", "id"),
            ))
            .to_owned(),
        Table::create()
            .table("submissions")
            .col(big_pk_auto("id"))
            .col(uuid("session_id"))
            .col(string("status"))
            .col(json_binary("payload"))
            .col(uuid_null("product_id"))
            .col(text_null("reason"))
            .col(timestamp_with_time_zone_null("lease_expires_at"))
            .col(timestamp_with_time_zone("created_at"))
            .col(timestamp_with_time_zone("updated_at"))
            .foreign_key(&mut fk(
                ("submissions", "session_id"),
                ("scrape_sessions", "id"),
            ))
            .foreign_key(
                ForeignKey::create()
                    .from("submissions", "product_id")
                    .to("products", "id")
                    .on_delete(ForeignKeyAction::SetNull),
            )
            .to_owned(),
        Table::create()
            .table("category_snapshots")
            .col(big_pk_auto("id"))
            .col(date("snapshot_date"))
            .col(string("marketplace"))
            .col(json_binary("category_path"))
            .col(big_integer("product_count"))
            .to_owned(),
        Table::create()
            .table("brand_snapshots")
            .col(big_pk_auto("id"))
            .col(date("snapshot_date"))
            .col(string_null("marketplace"))
            .col(string("brand"))
            .col(big_integer("product_count"))
            .to_owned(),
        Table::create()
            .table("webhook_subscriptions")
            .col(pk_uuid("id"))
            .col(uuid("account_id"))
            .col(string("target_url"))
            .col(string("secret"))
            .col(string("status"))
            .col(integer("consecutive_failures"))
            .col(timestamp_with_time_zone("created_at"))
            .col(timestamp_with_time_zone_null("disabled_at"))
            .foreign_key(&mut fk(
                ("webhook_subscriptions", "account_id"),
                ("accounts", "id"),
            ))
            .to_owned(),
        Table::create()
            .table("webhook_deliveries")
            .col(pk_uuid("id"))
            .col(uuid("subscription_id"))
            .col(uuid("session_id"))
            .col(string("event"))
            .col(text("payload"))
            .col(string("status"))
            .col(integer("attempts"))
            .col(timestamp_with_time_zone_null("next_attempt_at"))
            .col(timestamp_with_time_zone_null("locked_until"))
            .col(timestamp_with_time_zone("created_at"))
            .col(timestamp_with_time_zone_null("finished_at"))
            .foreign_key(&mut fk(
                ("webhook_deliveries", "subscription_id"),
                ("webhook_subscriptions", "id"),
            ))
            .to_owned(),
        Table::create()
            .table("webhook_attempts")
            .col(big_pk_auto("id"))
            .col(uuid("delivery_id"))
            .col(timestamp_with_time_zone("attempted_at"))
            .col(integer_null("status_code"))
            .col(text_null("error"))
            .col(big_integer("duration_ms"))
            .foreign_key(&mut fk(
                ("webhook_attempts", "delivery_id"),
                ("webhook_deliveries", "id"),
            ))
            .to_owned(),
        Table::create()
            .table("quota_usage")
            .col(uuid("account_id"))
            .col(date("day"))
            .col(big_integer("rows_used"))
            .primary_key(Index::create().col("account_id").col("day"))
            .foreign_key(&mut fk(("quota_usage", "account_id"), ("accounts", "id")))
            .to_owned(),
    ]
}

/// Price history and current prices share one shape.
fn price_table(name: &'static str) -> TableCreateStatement {
    Table::create()
        .table(name)
        .col(big_pk_auto("id"))
        .col(uuid("product_id"))
        .col(string("country_code"))
        .col(string_null("region_code"))
        .col(string("user_auth_status"))
        .col(double("price"))
        .col(double("old_price"))
        .col(string("currency"))
        .col(string_null("stock_status"))
        .col(big_integer_null("stock_quantity"))
        .col(timestamp_with_time_zone("recorded_at"))
        .foreign_key(&mut fk((name, "product_id"), ("products", "id")))
        .to_owned()
}

fn indexes() -> Vec<IndexCreateStatement> {
    vec![
        index("api_keys", "api_keys_account", &["account_id"]),
        index(
            "sellers",
            "sellers_marketplace_seller_id",
            &["marketplace", "seller_id"],
        )
        .unique()
        .to_owned(),
        index("sellers", "sellers_seller_id", &["seller_id"]),
        index("sellers", "sellers_tin", &["tin"]),
        index("sellers", "sellers_psrn", &["psrn"]),
        index("sellers", "sellers_url", &["url"]),
        index(
            "products",
            "products_marketplace_external_id",
            &["marketplace", "external_id"],
        )
        .unique()
        .to_owned(),
        index("products", "products_url", &["url"]),
        index("products", "products_seller_code", &["seller_code"]),
        index_desc("products", "products_newest", "first_seen_at", &["id"]),
        index_desc(
            "products",
            "products_brand_newest",
            "brand_key",
            &["first_seen_at", "id"],
        ),
        index_desc(
            "products",
            "products_seller_newest",
            "seller_ref",
            &["first_seen_at", "id"],
        ),
        index_desc(
            "products",
            "products_marketplace_newest",
            "marketplace",
            &["first_seen_at", "id"],
        ),
        index(
            "product_categories",
            "product_categories_key",
            &["category_key", "product_id"],
        ),
        index_desc(
            "price_observations",
            "price_observations_history",
            "product_id",
            &["recorded_at", "id"],
        ),
        index("current_prices", "current_prices_product", &["product_id"]),
        index(
            "special_prices",
            "special_prices_variant",
            &[
                "product_id",
                "country_code",
                "region_code",
                "user_auth_status",
            ],
        )
        .unique()
        .to_owned(),
        index_desc(
            "scrape_sessions",
            "scrape_sessions_account_newest",
            "account_id",
            &["created_at", "id"],
        ),
        index(
            "scrape_sessions",
            "scrape_sessions_idempotency",
            &["account_id", "idempotency_key"],
        )
        .unique()
        .to_owned(),
        index("submissions", "submissions_session", &["session_id", "id"]),
        index(
            "submissions",
            "submissions_session_status",
            &["session_id", "status"],
        ),
        index(
            "submissions",
            "submissions_claim",
            &["status", "lease_expires_at"],
        ),
        index("submissions", "submissions_product", &["product_id"]),
        index("submissions", "submissions_age", &["created_at"]),
        index(
            "category_snapshots",
            "category_snapshots_latest",
            &["marketplace", "snapshot_date"],
        ),
        index(
            "brand_snapshots",
            "brand_snapshots_latest",
            &["snapshot_date", "marketplace"],
        ),
        index(
            "webhook_subscriptions",
            "webhook_subscriptions_account",
            &["account_id"],
        ),
        index(
            "webhook_deliveries",
            "webhook_deliveries_once",
            &["subscription_id", "session_id", "event"],
        )
        .unique()
        .to_owned(),
        index(
            "webhook_deliveries",
            "webhook_deliveries_due",
            &["status", "next_attempt_at"],
        ),
        index(
            "webhook_attempts",
            "webhook_attempts_delivery",
            &["delivery_id", "id"],
        ),
    ]
}

/// Trigram indexes make `LIKE '%term%'` on the lower-cased search columns
/// index-backed on PostgreSQL.
const POSTGRES_ONLY: &[&str] = &[
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    "CREATE INDEX products_name_search_trgm ON products USING gin (name_search gin_trgm_ops)",
    "CREATE INDEX products_seller_code_trgm ON products USING gin (seller_code_key gin_trgm_ops)",
];

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in tables() {
            manager.create_table(table).await?;
        }
        for index in indexes() {
            manager.create_index(index).await?;
        }
        if manager.get_database_backend() == DbBackend::Postgres {
            let db = manager.get_connection();
            for sql in POSTGRES_ONLY {
                db.execute_unprepared(sql).await?;
            }
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in tables().iter().rev() {
            let name = table
                .get_table_name()
                .cloned()
                .ok_or_else(|| DbErr::Migration("table without a name".into()))?;
            manager
                .drop_table(Table::drop().table(name).to_owned())
                .await?;
        }
        Ok(())
    }
}
