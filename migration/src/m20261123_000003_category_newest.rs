//! The category filter lists a category's products newest first. Its rows
//! held only `(category_key, product_id)`, so every match was looked up in
//! `products` and sorted there before the first page could be cut (SQLite
//! answered a big category a few dozen times a second). Each row now keeps
//! its product's `first_seen_at` (which never changes once the product
//! exists), and `product_categories_newest` yields a category's products
//! in list order: a page reads only its own rows. It also serves everything
//! the old `(category_key, product_id)` index did, which it replaces.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

const TABLE: &str = "product_categories";

fn index(name: &str, columns: &[(&'static str, IndexOrder)]) -> IndexCreateStatement {
    let mut index = Index::create();
    index.name(name).table(TABLE);
    for (column, order) in columns {
        index.col((*column, order.clone()));
    }
    index.to_owned()
}

fn drop(name: &str) -> IndexDropStatement {
    Index::drop().name(name).table(TABLE).to_owned()
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // SQLite adds a NOT NULL column only with a default; every row gets
        // its real value below, and every writer sets it.
        manager
            .alter_table(
                Table::alter()
                    .table(TABLE)
                    .add_column(
                        ColumnDef::new("first_seen_at")
                            .timestamp_with_time_zone()
                            .not_null()
                            .default("1970-01-01 00:00:00+00:00"),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .get_connection()
            .execute_unprepared(
                "UPDATE product_categories SET first_seen_at = \
                 (SELECT p.first_seen_at FROM products p WHERE p.id = product_categories.product_id)",
            )
            .await?;
        manager
            .create_index(index(
                "product_categories_newest",
                &[
                    ("category_key", IndexOrder::Asc),
                    ("first_seen_at", IndexOrder::Desc),
                    ("product_id", IndexOrder::Desc),
                ],
            ))
            .await?;
        manager.drop_index(drop("product_categories_key")).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_index(index(
                "product_categories_key",
                &[
                    ("category_key", IndexOrder::Asc),
                    ("product_id", IndexOrder::Asc),
                ],
            ))
            .await?;
        manager
            .drop_index(drop("product_categories_newest"))
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(TABLE)
                    .drop_column("first_seen_at")
                    .to_owned(),
            )
            .await
    }
}
