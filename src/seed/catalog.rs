//! Generation of sellers and products with translations, category index rows,
//! price histories, current prices and special prices.

use std::collections::BTreeSet;

use chrono::{DateTime, NaiveDate, TimeDelta, Utc};
use entity::{
    Marketplace, StringList, TrustStatus, UserAuthStatus, current_price, price_observation,
    product, product_translation, seller, special_price,
};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use sea_orm::TryIntoModel;
use serde_json::{Value, json};

use super::ids::{Ids, Kind};
use super::load::Rows;
use super::vocab::{self, Names};
use crate::query::product_lists::Lists;
use crate::query::products::ProductView;
use crate::text::{self, SearchKeys};
use crate::views::{self, size::json_len};

/// Products per seller, on average.
const PRODUCTS_PER_SELLER: u64 = 40;
/// How many generated products are kept for the demo sessions.
const SAMPLE: usize = 24;

fn pick<'a, T>(rng: &mut ChaCha8Rng, items: &'a [T]) -> &'a T {
    &items[rng.random_range(0..items.len())]
}

fn digits(rng: &mut ChaCha8Rng, first: &str, len: usize) -> String {
    let mut out = first.to_owned();
    while out.len() < len {
        out.push(char::from(b'0' + rng.random_range(0..10u8)));
    }
    out
}

fn ago(days: i64, seconds: i64) -> DateTime<Utc> {
    super::anchor() - TimeDelta::days(days) - TimeDelta::seconds(seconds)
}

/// The product's name in the three languages (noun, brand, model,
/// colour), and its colour.
fn names(rng: &mut ChaCha8Rng, noun: &Names, brand: &str) -> ([String; 3], &'static Names) {
    let model = format!(
        "{}{}",
        ["X", "Pro ", "Lite ", "S", "M", ""][rng.random_range(0..6)],
        rng.random_range(1..990)
    );
    let color = pick(rng, vocab::COLORS);
    let names =
        std::array::from_fn(|lang| format!("{} {brand} {model}, {}", noun[lang], color[lang]));
    (names, color)
}

/// Half the products show a rating and a review count.
fn stats(rng: &mut ChaCha8Rng) -> Option<Value> {
    rng.random_bool(0.5).then(|| {
        json!({ "rating": f64::from(rng.random_range(30..=50u8)) / 10.0, "reviews_count": rng.random_range(0..5000) })
    })
}

/// What a rouble is worth in `currency`, roughly.
fn rubles_to(currency: &str) -> f64 {
    match currency {
        "KZT" => 5.3,
        "BYN" => 0.035,
        _ => 1.0,
    }
}

/// When a product was first and last seen: up to half a year back.
fn seen(rng: &mut ChaCha8Rng) -> (DateTime<Utc>, DateTime<Utc>) {
    let age_days = rng.random_range(1..180);
    let first_seen_at = ago(age_days, rng.random_range(0..86_400));
    let last_seen_at =
        ago(rng.random_range(0..age_days), rng.random_range(0..3600)).max(first_seen_at);
    (first_seen_at, last_seen_at)
}

/// A category path in the three languages and the noun of its leaf; about
/// one product in twenty has none, and some sit one level up, so that
/// depths differ.
fn category(rng: &mut ChaCha8Rng, index: u64) -> ([Vec<String>; 3], &'static Names) {
    if rng.random_bool(0.05) {
        return (Default::default(), pick(rng, vocab::UNCATEGORIZED));
    }
    let root = pick(rng, vocab::TREE);
    let branch = pick(rng, root.branches);
    let leaf = pick(rng, branch.leaves);
    let path = |lang: usize| {
        let mut p = vec![root.name[lang].to_owned(), branch.name[lang].to_owned()];
        if index % 7 != 3 {
            p.push(leaf.name[lang].to_owned());
        }
        p
    };
    ([path(0), path(1), path(2)], pick(rng, leaf.nouns))
}

/// The product's attributes in language `lang`.
fn attributes(lang: usize, color: &Names, index: u64) -> Value {
    let (color_key, material_key) = match lang {
        0 => ("цвет", "материал"),
        1 => ("color", "material"),
        _ => ("түсі", "материал"),
    };
    let material = vocab::MATERIALS[index as usize % vocab::MATERIALS.len()];
    json!({ color_key: color[lang], material_key: material, "original": !index.is_multiple_of(3) })
}

/// The product's languages (Russian, the default, then some of English and
/// Kazakh) and the one it was first seen in.
fn languages(rng: &mut ChaCha8Rng) -> (Vec<usize>, &'static str) {
    let mut languages = vec![0usize];
    if rng.random_bool(0.6) {
        languages.push(1);
    }
    if rng.random_bool(0.2) {
        languages.push(2);
    }
    let first_seen = if languages.contains(&1) && rng.random_bool(0.15) {
        "en"
    } else {
        "ru"
    };
    (languages, first_seen)
}

/// The product page a marketplace shows `external_id` at.
fn page_url(marketplace: Marketplace, external_id: &str) -> String {
    match marketplace {
        Marketplace::Wildberries => {
            format!("https://www.wildberries.ru/catalog/{external_id}/detail.aspx")
        }
        Marketplace::Ozon => format!("https://www.ozon.ru/product/{external_id}/"),
        Marketplace::YandexMarket => format!("https://market.yandex.ru/product/{external_id}"),
        Marketplace::Megamarket => format!("https://megamarket.ru/catalog/details/{external_id}/"),
    }
}

/// Seven products in ten unverified, a quarter verified, the rest flagged.
fn trust_status(rng: &mut ChaCha8Rng) -> TrustStatus {
    match rng.random_range(0..100) {
        0..70 => TrustStatus::Unverified,
        70..95 => TrustStatus::Verified,
        _ => TrustStatus::Flagged,
    }
}

/// The brand's first three letters or digits, upper-cased, and five digits.
fn seller_code(rng: &mut ChaCha8Rng, brand: &str) -> String {
    let brand_code: String = brand
        .chars()
        .filter(|c| c.is_alphanumeric())
        .take(3)
        .collect();
    format!("{}-{}", brand_code.to_uppercase(), digits(rng, "", 5))
}

/// The generator's memory between batches: brands, sellers, and a sample of
/// products for the demo sessions.
pub struct Catalog {
    ids: Ids,
    products: u64,
    brands: Vec<String>,
    sellers: Vec<seller::Model>,
    made: u64,
    /// Ids of the rows of the price tables: numbered in the order made, so
    /// they are the same in every run, whatever a sequence says.
    next_observation: i64,
    next_current: i64,
    next_special: i64,
    /// The first products generated, for the demo sessions.
    pub sample: Vec<product::Model>,
}

impl Catalog {
    pub fn new(rng: &mut ChaCha8Rng, ids: Ids, products: u64) -> Self {
        let mut brands: Vec<String> = vocab::BRANDS.iter().map(|b| (*b).to_owned()).collect();
        // Larger datasets get hundreds of extra brands made of syllables.
        let extra = (products / 200).min(1000);
        let mut seen: BTreeSet<String> = brands.iter().map(|b| text::fold(b)).collect();
        while (brands.len() as u64) < vocab::BRANDS.len() as u64 + extra {
            let mut name = String::new();
            for _ in 0..rng.random_range(2..4) {
                let syllable: &&str = pick(rng, vocab::SYLLABLES);
                name.push_str(syllable);
            }
            let mut chars = name.chars();
            let brand: String = chars
                .next()
                .map(|c| c.to_uppercase().chain(chars).collect())
                .unwrap_or_default();
            if seen.insert(text::fold(&brand)) {
                brands.push(brand);
            }
        }
        Catalog {
            ids,
            products,
            brands,
            sellers: Vec::new(),
            made: 0,
            next_observation: 1,
            next_current: 1,
            next_special: 1,
            sample: Vec::new(),
        }
    }

    /// Generates the sellers. Some legal entities sell on several marketplaces
    /// under one TIN.
    pub fn sellers(&mut self, rng: &mut ChaCha8Rng) -> Rows {
        let count = (self.products / PRODUCTS_PER_SELLER).max(8) as usize;
        let mut out: Vec<seller::Model> = Vec::with_capacity(count);
        for i in 0..count {
            let marketplace = Marketplace::ALL[i % Marketplace::ALL.len()];
            let seller_id = self.ids.seller_id(i as u64);
            let legal_entity = rng.random_bool(0.7);
            let (mut name, mut tin, mut psrn) = if legal_entity {
                (
                    format!("ООО «{}»", pick(rng, vocab::COMPANY_WORDS)),
                    digits(rng, "77", 10),
                    digits(rng, "1", 13),
                )
            } else {
                let initials: String =
                    ["А", "В", "Е", "И", "М", "О", "С"][rng.random_range(0..7)].into();
                (
                    format!("ИП {} {initials}.", pick(rng, vocab::SURNAMES)),
                    digits(rng, "50", 12),
                    digits(rng, "3", 15),
                )
            };
            // Every fourth seller starts a group; later members may be the same
            // legal entity on another marketplace.
            let first_of_group = i - i % Marketplace::ALL.len();
            if i != first_of_group && rng.random_bool(0.4) {
                let twin = &out[first_of_group];
                (name, tin, psrn) = (twin.name.clone(), twin.tin.clone(), twin.psrn.clone());
            }
            let slug = format!("shop-{seller_id}");
            let url = match marketplace {
                Marketplace::Wildberries => {
                    format!("https://www.wildberries.ru/seller/{seller_id}")
                }
                Marketplace::Ozon => format!("https://www.ozon.ru/seller/{slug}"),
                Marketplace::YandexMarket => {
                    format!("https://market.yandex.ru/business--{slug}/{seller_id}")
                }
                Marketplace::Megamarket => format!("https://megamarket.ru/shop/{slug}"),
            };
            let first_seen_at = ago(rng.random_range(200..400), rng.random_range(0..86_400));
            out.push(seller::Model {
                id: self.ids.uuid(Kind::Seller, i as u64),
                marketplace,
                seller_id,
                name,
                tin,
                psrn,
                address: format!(
                    "{}, {}, д. {}",
                    pick(rng, vocab::CITIES),
                    pick(rng, vocab::STREETS),
                    rng.random_range(1..120)
                ),
                url: text::url_key(&url),
                rating: f64::from(rng.random_range(30..=50u8)) / 10.0,
                reg_date: NaiveDate::from_ymd_opt(
                    rng.random_range(2012..2026),
                    rng.random_range(1..=12),
                    rng.random_range(1..=28),
                ),
                items_sold: rng.random_range(10..2_000_000),
                reviews_count: rng.random_range(0..150_000),
                first_seen_at,
                last_seen_at: ago(rng.random_range(0..30), rng.random_range(0..86_400)),
            });
        }
        self.sellers = out.clone();
        Rows {
            sellers: out,
            ..Rows::default()
        }
    }

    /// Generates the next `count` products with everything that hangs off them.
    pub fn products(&mut self, rng: &mut ChaCha8Rng, count: u64) -> Rows {
        let mut batch = Rows::default();
        for _ in 0..count {
            self.product(rng, &mut batch);
        }
        batch
    }

    fn product(&mut self, rng: &mut ChaCha8Rng, batch: &mut Rows) {
        let index = self.made;
        self.made += 1;
        let seller = rng.random_range(0..self.sellers.len());
        let marketplace = self.sellers[seller].marketplace;
        let id = self.ids.uuid(Kind::Product, index);

        let (paths, noun) = category(rng, index);
        let brand = self.brands[rng.random_range(0..self.brands.len())].clone();
        let (names, color) = names(rng, noun, &brand);
        let attributes = |lang: usize| attributes(lang, color, index);
        let (languages, first_seen_language) = languages(rng);

        let (first_seen_at, last_seen_at) = seen(rng);
        let external_id = self.ids.external_id(index);
        let host = page_url(marketplace, &external_id);
        let image = |n: u32| format!("https://cdn.example-images.ru/{external_id}/{n}.webp");
        let gallery: Vec<String> = (1..=rng.random_range(1..6)).map(image).collect();
        let has_video = rng.random_bool(0.3);
        let trust_status = trust_status(rng);
        let seller_code = seller_code(rng, &brand);
        let stats = stats(rng);

        let keys = SearchKeys::of(
            &brand,
            &seller_code,
            languages
                .iter()
                .map(|&l| (names[l].as_str(), paths[l].as_slice())),
        );
        batch.categories.extend(
            keys.category_rows(id, first_seen_at)
                .into_iter()
                .filter_map(|row| row.try_into_model().ok()),
        );
        let model = product::Model {
            id,
            marketplace,
            url: text::normalize_url(&host),
            image_cover: image(1),
            name: names[0].clone(),
            brand_key: keys.brand_key,
            brand,
            category_path: StringList(paths[0].clone()),
            attributes: attributes(0),
            image_gallery: StringList(gallery),
            external_id,
            video_cover: has_video.then(|| format!("https://cdn.example-video.ru/{id}.mp4")),
            video_gallery: StringList(if has_video {
                vec![format!("https://cdn.example-video.ru/{id}-2.mp4")]
            } else {
                vec![]
            }),
            seller_ref: self.sellers[seller].id,
            seller_code_key: keys.seller_code_key,
            seller_code,
            name_search: keys.name_search,
            trust_status,
            price_flagged: rng.random_bool(0.03),
            stats,
            first_seen_language: first_seen_language.to_owned(),
            default_language: "ru".to_owned(),
            first_seen_at,
            last_seen_at,
            // Measured by `add`, once everything it shows is made.
            stored_size: 0,
        };

        let translation = |lang: usize| product_translation::Model {
            product_id: id,
            language: vocab::LANGUAGES[lang].to_owned(),
            name: names[lang].clone(),
            category_path: StringList(paths[lang].clone()),
            attributes: attributes(lang),
            updated_at: last_seen_at,
        };
        let translations = languages[1..].iter().map(|&lang| translation(lang));
        self.add(rng, batch, model, seller, translations.collect());
    }

    /// Adds the product with its translations, price history and the
    /// stored size of all it shows to `batch`.
    fn add(
        &mut self,
        rng: &mut ChaCha8Rng,
        batch: &mut Rows,
        mut model: product::Model,
        seller: usize,
        translations: Vec<product_translation::Model>,
    ) {
        let (current, special) = self.prices(rng, &model, &mut batch.observations);
        model.stored_size = stored_size(ProductView {
            product: model.clone(),
            seller: Some(self.sellers[seller].clone()),
            lists: Lists {
                prices: current.clone(),
                special_prices: special.clone(),
                translations: translations.clone(),
            },
        });
        batch.translations.extend(translations);
        batch.current.extend(current);
        batch.special.extend(special);
        if self.sample.len() < SAMPLE {
            self.sample.push(model.clone());
        }
        batch.products.push(model);
    }

    /// A random-walk price history per variant between first and last seen,
    /// added to `history`; the last observation of each variant is its
    /// current price. Returns the current and special prices.
    fn prices(
        &mut self,
        rng: &mut ChaCha8Rng,
        product: &product::Model,
        history: &mut Vec<price_observation::Model>,
    ) -> (Vec<current_price::Model>, Vec<special_price::Model>) {
        let (mut current, mut special) = (Vec::new(), Vec::new());
        let variant_count = rng.random_range(1..=3);
        let first = rng.random_range(0..vocab::VARIANTS.len());
        let base = f64::from(rng.random_range(90..40_000u32));
        let span = (product.last_seen_at - product.first_seen_at)
            .num_seconds()
            .max(1);
        for v in 0..variant_count {
            let (country, region, currency) = vocab::VARIANTS[(first + v) % vocab::VARIANTS.len()];
            let auth = if rng.random_bool(0.3) {
                UserAuthStatus::Authenticated
            } else {
                UserAuthStatus::Anonymous
            };
            let rate = rubles_to(currency);
            let observations = rng.random_range(3..=8);
            let mut price = base * rate;
            let first_row = history.len();
            for k in 0..observations {
                price = (price * rng.random_range(0.9..1.1)).max(1.0);
                let recorded_at = product.first_seen_at
                    + TimeDelta::seconds(span * k / (observations - 1).max(1));
                let stock_status =
                    vocab::STOCK_STATUSES[rng.random_range(0..vocab::STOCK_STATUSES.len())];
                let row = price_observation::Model {
                    id: self.next_observation,
                    product_id: product.id,
                    country_code: country.to_owned(),
                    region_code: region.map(str::to_owned),
                    user_auth_status: auth,
                    price: price.round(),
                    old_price: (price * rng.random_range(1.05..1.6)).round(),
                    currency: currency.to_owned(),
                    stock_status: (k % 4 != 1).then(|| stock_status.to_owned()),
                    stock_quantity: (stock_status != "out_of_stock")
                        .then(|| rng.random_range(1..500)),
                    recorded_at,
                };
                self.next_observation += 1;
                history.push(row);
            }
            if let Some(row) = history[first_row..].last().cloned() {
                if v == 0 && rng.random_bool(0.3) {
                    special.push(special_price::Model {
                        id: self.next_special,
                        product_id: product.id,
                        country_code: country.to_owned(),
                        region_code: region.unwrap_or_default().to_owned(),
                        user_auth_status: auth,
                        min: (row.price * 0.8).round(),
                        max: row.price,
                    });
                    self.next_special += 1;
                }
                current.push(current_price::Model {
                    id: self.next_current,
                    product_id: row.product_id,
                    country_code: row.country_code,
                    region_code: row.region_code,
                    user_auth_status: row.user_auth_status,
                    price: row.price,
                    old_price: row.old_price,
                    currency: row.currency,
                    stock_status: row.stock_status,
                    stock_quantity: row.stock_quantity,
                    recorded_at: row.recorded_at,
                });
                self.next_current += 1;
            }
        }
        (current, special)
    }

    /// The external id of a product the catalog does not hold: the demo's
    /// items not merged yet. `n` counts them from zero.
    pub fn unknown_external_id(&self, n: u64) -> String {
        self.ids.external_id(self.products + n)
    }

    /// The id of the demo's scrape session `n`.
    pub fn session_id(&self, n: u64) -> uuid::Uuid {
        self.ids.uuid(Kind::Session, n)
    }

    /// The marketplace's id of the seller with internal id `id`.
    pub fn seller_id(&self, id: uuid::Uuid) -> Option<&str> {
        self.sellers
            .iter()
            .find(|s| s.id == id)
            .map(|s| s.seller_id.as_str())
    }
}

/// Bytes of the product's v1 JSON, as the merge measures it
/// (`jobs::merge::size`) from the rows it reads back.
fn stored_size(view: ProductView) -> i64 {
    i64::try_from(json_len(&views::Product::from(view))).unwrap_or(i64::MAX)
}

/// A scraped item as the extension would upload it, for the demo sessions.
pub fn item_payload(product: &product::Model, seller_id: &str) -> Value {
    json!({
        "marketplace": product.marketplace,
        "external_id": product.external_id,
        "url": product.url,
        "language": product.default_language,
        "name": product.name,
        "brand": product.brand,
        "category_path": product.category_path,
        "attributes": product.attributes,
        "image_cover": product.image_cover,
        "image_gallery": product.image_gallery,
        "seller": { "id": seller_id, "code": product.seller_code },
        "observed_at": product.last_seen_at,
    })
}
