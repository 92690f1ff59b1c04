//! A product's search keys: the folded copies of its texts that the filters
//! match (`products.brand_key`, `seller_code_key`, `name_search`) and its
//! `product_categories` rows. They are derived here alone, so the merge, the
//! seed and the test fixtures store exactly what the filters look for.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use entity::product_category;
use sea_orm::ActiveValue::Set;
use uuid::Uuid;

use super::fold;

/// Separates the per-language names inside `name_search`; a control
/// character no search term can contain, so no match spans two names.
const NAME_SEPARATOR: char = '\u{1f}';

/// Everything a product is found by, derived from its brand, seller code and
/// the name and category path of each of its languages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchKeys {
    pub brand_key: String,
    pub seller_code_key: String,
    /// Every name, folded, the default language's first, separated by
    /// `NAME_SEPARATOR`.
    pub name_search: String,
    /// Every distinct folded category name at any level of any language's
    /// path.
    pub category_keys: BTreeSet<String>,
}

impl SearchKeys {
    /// The keys of a product; `languages` holds each language's name and
    /// category path, the default language first.
    pub fn of<'a>(
        brand: &str,
        seller_code: &str,
        languages: impl IntoIterator<Item = (&'a str, &'a [String])>,
    ) -> Self {
        let mut name_search = String::new();
        let mut category_keys = BTreeSet::new();
        for (name, path) in languages {
            if !name_search.is_empty() {
                name_search.push(NAME_SEPARATOR);
            }
            name_search.push_str(&fold(name));
            category_keys.extend(path.iter().map(|level| fold(level)));
        }
        SearchKeys {
            brand_key: fold(brand),
            seller_code_key: fold(seller_code),
            name_search,
            category_keys,
        }
    }

    /// The product's `product_categories` rows; each carries the product's
    /// `first_seen_at`, by which a category lists its products.
    pub fn category_rows(
        &self,
        product_id: Uuid,
        first_seen_at: DateTime<Utc>,
    ) -> Vec<product_category::ActiveModel> {
        self.category_keys
            .iter()
            .map(|key| product_category::ActiveModel {
                product_id: Set(product_id),
                category_key: Set(key.clone()),
                first_seen_at: Set(first_seen_at),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(levels: &[&str]) -> Vec<String> {
        levels.iter().map(|l| (*l).to_owned()).collect()
    }

    #[test]
    fn folds_brand_seller_code_and_names_including_cyrillic() {
        let ru = path(&["Электроника"]);
        let keys = SearchKeys::of("ПростоКвашино", "SC-Ab1", [("Наушники X1", ru.as_slice())]);
        assert_eq!(keys.brand_key, "простоквашино");
        assert_eq!(keys.seller_code_key, "sc-ab1");
        assert_eq!(keys.name_search, "наушники x1");
    }

    #[test]
    fn names_are_separated_default_language_first() {
        let none: &[String] = &[];
        let keys = SearchKeys::of(
            "",
            "",
            [("Чайник", none), ("Kettle", none), ("ШӘЙНЕК", none)],
        );
        assert_eq!(keys.name_search, "чайник\u{1f}kettle\u{1f}шәйнек");
    }

    #[test]
    fn category_keys_are_distinct_across_levels_and_languages() {
        let ru = path(&["Электроника", "Аудио", "Наушники"]);
        let en = path(&["Electronics", "Audio", "НАУШНИКИ"]);
        let kk = path(&["Электроника", "Audio"]);
        let keys = SearchKeys::of(
            "Acme",
            "SC-1",
            [
                ("Наушники", ru.as_slice()),
                ("Headphones", en.as_slice()),
                ("Құлаққап", kk.as_slice()),
            ],
        );
        let expected: BTreeSet<String> =
            ["audio", "electronics", "аудио", "наушники", "электроника"]
                .map(String::from)
                .into();
        assert_eq!(keys.category_keys, expected);
    }

    #[test]
    fn a_product_without_languages_has_no_names_or_categories() {
        let keys = SearchKeys::of("Acme", "", []);
        assert_eq!(keys.name_search, "");
        assert!(keys.category_keys.is_empty());
        assert!(
            keys.category_rows(Uuid::nil(), DateTime::UNIX_EPOCH)
                .is_empty()
        );
    }

    #[test]
    fn category_rows_carry_the_product_and_its_first_sighting() {
        let ru = path(&["Дом", "Кухня"]);
        let at = DateTime::UNIX_EPOCH;
        let id = Uuid::from_u128(7);
        let rows = SearchKeys::of("", "", [("Чайник", ru.as_slice())]).category_rows(id, at);
        let keys: Vec<String> = rows
            .iter()
            .map(|r| r.category_key.clone().unwrap())
            .collect();
        assert_eq!(keys, ["дом", "кухня"]);
        assert!(
            rows.iter()
                .all(|r| r.product_id == Set(id) && r.first_seen_at == Set(at))
        );
    }
}
