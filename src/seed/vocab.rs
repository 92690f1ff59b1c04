//! Words the demo dataset is made of: a category tree in three languages,
//! product nouns, brands (Latin and Cyrillic), and seller name parts.

/// A category name in Russian (default), English and Kazakh.
pub type Names = [&'static str; 3];

/// A leaf category with the product nouns sold in it (ru, en, kk).
pub struct Leaf {
    pub name: Names,
    pub nouns: &'static [Names],
}

pub struct Branch {
    pub name: Names,
    pub leaves: &'static [Leaf],
}

pub struct Root {
    pub name: Names,
    pub branches: &'static [Branch],
}

pub const LANGUAGES: [&str; 3] = ["ru", "en", "kk"];

pub const TREE: &[Root] = &[
    Root {
        name: ["Электроника", "Electronics", "Электроника"],
        branches: &[
            Branch {
                name: [
                    "Смартфоны и гаджеты",
                    "Smartphones and gadgets",
                    "Смартфондар мен гаджеттер",
                ],
                leaves: &[
                    Leaf {
                        name: ["Смартфоны", "Smartphones", "Смартфондар"],
                        nouns: &[["Смартфон", "Smartphone", "Смартфон"]],
                    },
                    Leaf {
                        name: ["Умные часы", "Smartwatches", "Ақылды сағаттар"],
                        nouns: &[
                            ["Умные часы", "Smartwatch", "Ақылды сағат"],
                            ["Фитнес-браслет", "Fitness band", "Фитнес-білезік"],
                        ],
                    },
                ],
            },
            Branch {
                name: ["Аудиотехника", "Audio", "Аудиотехника"],
                leaves: &[
                    Leaf {
                        name: ["Наушники", "Headphones", "Құлаққаптар"],
                        nouns: &[
                            [
                                "Наушники беспроводные",
                                "Wireless headphones",
                                "Сымсыз құлаққап",
                            ],
                            ["Наушники накладные", "On-ear headphones", "Құлаққап"],
                        ],
                    },
                    Leaf {
                        name: ["Колонки", "Speakers", "Колонкалар"],
                        nouns: &[[
                            "Портативная колонка",
                            "Portable speaker",
                            "Портативті колонка",
                        ]],
                    },
                ],
            },
        ],
    },
    Root {
        name: ["Бытовая техника", "Home appliances", "Тұрмыстық техника"],
        branches: &[
            Branch {
                name: ["Техника для кухни", "Kitchen appliances", "Ас үй техникасы"],
                leaves: &[
                    Leaf {
                        name: ["Чайники", "Kettles", "Шәйнектер"],
                        nouns: &[["Чайник электрический", "Electric kettle", "Электр шәйнегі"]],
                    },
                    Leaf {
                        name: ["Кофемашины", "Coffee machines", "Кофе машиналары"],
                        nouns: &[
                            ["Кофемашина", "Coffee machine", "Кофе машинасы"],
                            ["Кофеварка капельная", "Drip coffee maker", "Кофе қайнатқыш"],
                        ],
                    },
                ],
            },
            Branch {
                name: ["Уборка", "Cleaning", "Тазалау"],
                leaves: &[Leaf {
                    name: ["Пылесосы", "Vacuum cleaners", "Шаңсорғыштар"],
                    nouns: &[
                        ["Пылесос", "Vacuum cleaner", "Шаңсорғыш"],
                        ["Робот-пылесос", "Robot vacuum", "Робот шаңсорғыш"],
                    ],
                }],
            },
        ],
    },
    Root {
        name: ["Обувь", "Shoes", "Аяқ киім"],
        branches: &[
            Branch {
                name: ["Мужская обувь", "Men's shoes", "Ерлер аяқ киімі"],
                leaves: &[
                    Leaf {
                        name: ["Кроссовки", "Sneakers", "Кроссовкалар"],
                        nouns: &[["Кроссовки", "Sneakers", "Кроссовкалар"]],
                    },
                    Leaf {
                        name: ["Ботинки", "Boots", "Бәтеңкелер"],
                        nouns: &[["Ботинки зимние", "Winter boots", "Қысқы бәтеңке"]],
                    },
                ],
            },
            Branch {
                name: ["Женская обувь", "Women's shoes", "Әйелдер аяқ киімі"],
                leaves: &[Leaf {
                    name: ["Туфли", "Pumps", "Туфлилер"],
                    nouns: &[["Туфли лодочки", "Pumps", "Туфли"]],
                }],
            },
        ],
    },
    Root {
        name: ["Продукты", "Groceries", "Азық-түлік"],
        branches: &[
            Branch {
                name: ["Молочные продукты", "Dairy", "Сүт өнімдері"],
                leaves: &[Leaf {
                    name: ["Молоко", "Milk", "Сүт"],
                    nouns: &[
                        ["Молоко ультрапастеризованное", "UHT milk", "Сүт"],
                        ["Кефир", "Kefir", "Айран"],
                    ],
                }],
            },
            Branch {
                name: ["Бакалея", "Pantry", "Бакалея"],
                leaves: &[
                    Leaf {
                        name: ["Кофе", "Coffee", "Кофе"],
                        nouns: &[
                            ["Кофе в зёрнах", "Coffee beans", "Дәнді кофе"],
                            ["Кофе молотый", "Ground coffee", "Ұнтақ кофе"],
                        ],
                    },
                    Leaf {
                        name: ["Чай", "Tea", "Шай"],
                        nouns: &[["Чай чёрный листовой", "Black leaf tea", "Қара шай"]],
                    },
                ],
            },
        ],
    },
    Root {
        name: ["Дом и сад", "Home and garden", "Үй және бақ"],
        branches: &[Branch {
            name: ["Посуда", "Cookware", "Ыдыс-аяқ"],
            leaves: &[Leaf {
                name: ["Сковороды", "Frying pans", "Табалар"],
                nouns: &[["Сковорода антипригарная", "Non-stick frying pan", "Таба"]],
            }],
        }],
    },
];

/// Nouns of products sold without a category path.
pub const UNCATEGORIZED: &[Names] = &[["Подарочный набор", "Gift set", "Сыйлық жиынтығы"]];

pub const BRANDS: &[&str] = &[
    "Samsung",
    "Xiaomi",
    "Apple",
    "Huawei",
    "Realme",
    "Honor",
    "Sony",
    "JBL",
    "Bosch",
    "Philips",
    "Redmond",
    "Polaris",
    "Tefal",
    "De'Longhi",
    "Nike",
    "Adidas",
    "Puma",
    "Reebok",
    "ECCO",
    "Lavazza",
    "Jacobs",
    "Greenfield",
    "Dyson",
    "Karcher",
    "Мираторг",
    "Простоквашино",
    "Домик в деревне",
    "Красная линия",
    "Бабушкино лукошко",
    "Сказка",
    "Витязь",
    "Ресанта",
    "Зубр",
    "Сокол",
    "Пятёрочка Вкусно",
    "Северное сияние",
    "Уральские самоцветы",
    "Байкал",
];

/// Syllables for the synthetic brands that larger datasets add.
pub const SYLLABLES: &[&str] = &[
    "ар", "бел", "вел", "гор", "дин", "зар", "кол", "лин", "мир", "нор", "опт", "рус", "сол",
    "тех", "ур", "фан", "хол", "цен", "эко", "ян",
];

pub const COLORS: &[Names] = &[
    ["чёрный", "black", "қара"],
    ["белый", "white", "ақ"],
    ["серый", "grey", "сұр"],
    ["синий", "blue", "көк"],
    ["красный", "red", "қызыл"],
];

pub const MATERIALS: &[&str] = &[
    "пластик",
    "металл",
    "текстиль",
    "кожа",
    "стекло",
    "керамика",
];

pub const SURNAMES: &[&str] = &[
    "Иванов",
    "Смирнов",
    "Кузнецов",
    "Попов",
    "Васильев",
    "Петров",
    "Соколов",
    "Михайлов",
    "Новиков",
    "Фёдоров",
    "Морозов",
    "Волков",
    "Алексеев",
    "Лебедев",
    "Семёнов",
    "Егоров",
];

pub const COMPANY_WORDS: &[&str] = &[
    "Вектор",
    "Альфа",
    "Гранит",
    "Меридиан",
    "Восток",
    "Сфера",
    "Импульс",
    "Континент",
    "Орион",
    "Прайм",
    "Ритм",
    "Атлант",
    "Феникс",
    "Стандарт",
    "Эталон",
    "Горизонт",
];

pub const CITIES: &[&str] = &[
    "г. Москва",
    "г. Санкт-Петербург",
    "г. Казань",
    "г. Екатеринбург",
    "г. Новосибирск",
    "г. Краснодар",
    "г. Нижний Новгород",
    "г. Самара",
];

pub const STREETS: &[&str] = &[
    "ул. Ленина",
    "ул. Мира",
    "пр-т Победы",
    "ул. Садовая",
    "ул. Гагарина",
    "наб. Реки",
];

/// Price variants: country, region (marketplace-native code) and currency.
pub const VARIANTS: &[(&str, Option<&str>, &str)] = &[
    ("ru", None, "RUB"),
    ("ru", Some("msk"), "RUB"),
    ("ru", Some("spb"), "RUB"),
    ("kz", None, "KZT"),
    ("by", Some("minsk"), "BYN"),
];

pub const STOCK_STATUSES: &[&str] = &["in_stock", "low_stock", "out_of_stock"];
