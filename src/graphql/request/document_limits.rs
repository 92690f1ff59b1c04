//! What a GraphQL document may ask for, measured before async-graphql sees
//! it. async-graphql's own checks (its recursion and depth walks, its
//! complexity) follow every fragment spread anew, so a kilobyte of fragments
//! that spread each other twice per level takes exponential time before
//! any limit answers; and its complexity counts neither aliases nor
//! `__typename`. Here each fragment is measured once and its measure reused
//! wherever it is spread, so the check is linear in the document, and a
//! document over a limit never reaches the validator or the executor.
//!
//! Measured, after fragment expansion and over every operation of the
//! document (async-graphql validates them all, whichever one runs):
//! - fields, each alias and `__typename` included: what the validator and
//!   the executor walk, one by one;
//! - aliases: the only way to ask for one field many times over;
//! - depth of the data fields. Introspection (`__schema`, `__type`) is left
//!   out of the depth, since the standard introspection query of every
//!   client is deeper than any sensible data limit;
//! - introspection's cost: each of its fields costs 1, times the length of
//!   every list it sits in (a schema's types, a type's fields, a field's
//!   arguments, ...). A list's length is taken as the longest such list in
//!   this schema ([`IntrospectionSizes`]), so the cost bounds the answer's
//!   size whatever the query nests or repeats.
//!
//! The connection-aware cost (page sizes) is async-graphql's complexity,
//! checked after validation ([`RequestLimits::check_complexity`]): once a
//! document passes here, computing it is as cheap as the document is small.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use async_graphql::parser::types::{
    DocumentOperations, ExecutableDocument, FragmentDefinition, Selection, SelectionSet, TypeKind,
    TypeSystemDefinition,
};
use async_graphql::{Name, Request, ServerError};

use super::error_codes::ErrorClass;
use crate::config::GraphqlConfig;
use crate::http::ApiError;

/// The limits of one request, from the configuration.
#[derive(Debug, Clone, Copy)]
pub struct RequestLimits {
    pub max_bytes: usize,
    pub max_fields: u64,
    pub max_aliases: u64,
    pub max_directives: u64,
    pub max_depth: u64,
    pub max_introspection_cost: u64,
    pub max_complexity: usize,
    /// Most operations of a batched request.
    pub max_batch: u32,
    /// How long an admitted request may take before its work is stopped.
    pub deadline: Duration,
    /// What introspection's lists may hold, for its cost.
    pub introspection: IntrospectionSizes,
}

impl RequestLimits {
    pub fn new(config: &GraphqlConfig, introspection: IntrospectionSizes) -> Self {
        RequestLimits {
            introspection,
            max_bytes: config.max_document_bytes,
            max_fields: config.max_fields,
            max_aliases: config.max_aliases,
            max_directives: config.max_directives,
            max_depth: config.max_depth,
            max_introspection_cost: config.max_introspection_cost,
            max_complexity: config.max_complexity,
            max_batch: config.max_batch,
            deadline: Duration::from_millis(config.deadline_ms),
        }
    }

    /// Refuses a request over the document limits. Runs before
    /// async-graphql's own checks, on a query that comes parsed
    /// (`parsed::parse`, which codes a document that does not parse).
    pub fn admit(&self, request: &mut Request) -> Result<(), ServerError> {
        self.check_text(&request.query)?;
        self.check(request.parsed_query()?)?;
        Ok(())
    }

    /// Refuses a validated request whose complexity (page sizes
    /// multiplying what each page holds) is over the limit.
    pub fn check_complexity(&self, complexity: usize) -> Result<(), ServerError> {
        Limit {
            says: "The query's complexity is {} (each field 1, a connection's fields times \
                   its page size)",
            max: self.max_complexity as u64,
            setting: "VITRINA_GRAPHQL_MAX_COMPLEXITY",
        }
        .refuse_over(complexity as u64)
    }

    /// Refuses a batch of more than the batch limit's operations, before
    /// any is costed.
    pub fn check_batch_size(&self, operations: usize) -> Result<(), ServerError> {
        Limit {
            says: "The batch holds {} operations",
            max: u64::from(self.max_batch),
            setting: "VITRINA_GRAPHQL_MAX_BATCH",
        }
        .refuse_over(operations as u64)
    }

    /// Refuses a batch whose operations' complexities add up to more than
    /// the complexity limit: a batch is costed as a whole.
    pub fn check_batch_complexity(&self, complexity: usize) -> Result<(), ServerError> {
        Limit {
            says: "The batch's complexity is {} (the sum of its operations')",
            max: self.max_complexity as u64,
            setting: "VITRINA_GRAPHQL_MAX_COMPLEXITY",
        }
        .refuse_over(complexity as u64)
    }

    /// Refuses a request whose query is longer than the document limit,
    /// or nests deeper than the parser can follow, before it is parsed.
    pub fn check_text(&self, query: &str) -> Result<(), ServerError> {
        Limit {
            says: "The query document is {} bytes long",
            max: self.max_bytes as u64,
            setting: "VITRINA_GRAPHQL_MAX_DOCUMENT_BYTES",
        }
        .refuse_over(query.len() as u64)?;
        Limit {
            says: "The query document nests its braces, brackets and parentheses {} levels deep",
            max: MAX_NESTING as u64,
            setting: "the parser's own limit",
        }
        .refuse_over(nesting(query))
    }

    /// Measures a parsed document and refuses it when over a limit. The
    /// document must have passed [`RequestLimits::check_text`]: the walk
    /// recurses as deep as the document nests.
    fn check(&self, document: &ExecutableDocument) -> Result<(), ServerError> {
        let shape = Shape::of(document, &self.introspection)?;
        let limits = [
            (
                shape.fields,
                Limit {
                    says: "The query asks for {} fields once its fragments are expanded",
                    max: self.max_fields,
                    setting: "VITRINA_GRAPHQL_MAX_FIELDS",
                },
            ),
            (
                shape.aliases,
                Limit {
                    says: "The query uses {} aliases once its fragments are expanded",
                    max: self.max_aliases,
                    setting: "VITRINA_GRAPHQL_MAX_ALIASES",
                },
            ),
            (
                shape.directives,
                Limit {
                    says: "The query uses {} directives once its fragments are expanded",
                    max: self.max_directives,
                    setting: "VITRINA_GRAPHQL_MAX_DIRECTIVES",
                },
            ),
            (
                shape.depth,
                Limit {
                    says: "The query nests its fields {} levels deep",
                    max: self.max_depth,
                    setting: "VITRINA_GRAPHQL_MAX_DEPTH",
                },
            ),
            (
                shape.introspection_cost,
                Limit {
                    says: "The query's introspection costs {} (each field 1, times the longest \
                       list of this schema it sits in)",
                    max: self.max_introspection_cost,
                    setting: "VITRINA_GRAPHQL_MAX_INTROSPECTION_COST",
                },
            ),
        ];
        for (measured, limit) in limits {
            limit.refuse_over(measured)?;
        }
        Ok(())
    }
}

/// The deepest nesting of braces, brackets and parentheses a document may
/// have, which is also the validator's recursion limit (selections, and the
/// fragments they spread, nested inside each other): the parser recurses at
/// each on the thread's stack, and past 64 levels it refuses a document
/// with a message that quotes the whole of it.
pub const MAX_NESTING: usize = 64;

/// How deeply the document nests `{`, `[` and `(`, outside strings and
/// comments: one pass over its bytes.
fn nesting(query: &str) -> u64 {
    let bytes = query.as_bytes();
    let (mut depth, mut deepest, mut at) = (0u64, 0u64, 0);
    while at < bytes.len() {
        match bytes[at] {
            b'{' | b'[' | b'(' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b'}' | b']' | b')' => depth = depth.saturating_sub(1),
            b'#' => {
                while at < bytes.len() && !matches!(bytes[at], b'\n' | b'\r') {
                    at += 1;
                }
            }
            b'"' if bytes[at..].starts_with(b"\"\"\"") => {
                at += 3;
                while at < bytes.len() && !bytes[at..].starts_with(b"\"\"\"") {
                    at += if bytes[at..].starts_with(b"\\\"\"\"") {
                        4
                    } else {
                        1
                    };
                }
                at += 2;
            }
            b'"' => {
                at += 1;
                while at < bytes.len() && !matches!(bytes[at], b'"' | b'\n' | b'\r') {
                    at += if bytes[at] == b'\\' { 2 } else { 1 };
                }
            }
            _ => {}
        }
        at += 1;
    }
    deepest
}

/// The refusal of a request that ran past its deadline.
pub fn timeout(deadline: Duration) -> ApiError {
    ApiError::Timeout {
        after_ms: deadline.as_millis().try_into().unwrap_or(u64::MAX),
        setting: "VITRINA_GRAPHQL_DEADLINE_MS",
    }
}

/// A limit and how its refusal reads: `says` holds `{}` where the measured
/// value goes.
struct Limit {
    says: &'static str,
    max: u64,
    setting: &'static str,
}

impl Limit {
    /// The refusal of a measure over the limit, naming both and the setting.
    fn refuse_over(&self, measured: u64) -> Result<(), ServerError> {
        if measured <= self.max {
            return Ok(());
        }
        let measured = match measured {
            u64::MAX => format!("more than {}", u64::MAX - 1),
            n => n.to_string(),
        };
        let (max, setting) = (self.max, self.setting);
        let says = self.says.replacen("{}", &measured, 1);
        let refusal = format!("{says}; the limit is {max} ({setting}).");
        Err(ErrorClass::TooComplex.error(refusal))
    }
}

/// What a document asks for once its fragments are expanded. Counts
/// saturate instead of overflowing: a document can describe more fields
/// than a `u64` holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Shape {
    pub fields: u64,
    pub aliases: u64,
    /// Directives on fields, spreads, fragments and operations.
    pub directives: u64,
    /// Deepest nesting of data fields (a field with no selection is 1).
    pub depth: u64,
    /// Each introspection field 1, times the lengths of the lists it is in.
    pub introspection_cost: u64,
}

impl Shape {
    /// The shape of every operation of `document`, summed (fields,
    /// aliases, cost) or the greatest (depth).
    pub fn of(
        document: &ExecutableDocument,
        sizes: &IntrospectionSizes,
    ) -> Result<Shape, ServerError> {
        let fragments = Fragments::measure(document, sizes)?;
        let operations: Vec<_> = match &document.operations {
            DocumentOperations::Single(operation) => vec![operation],
            DocumentOperations::Multiple(operations) => operations.values().collect(),
        };
        Ok(operations
            .into_iter()
            .map(|operation| {
                let directives = Shape::directives(operation.node.directives.len());
                fragments
                    .set(&operation.node.selection_set.node, false)
                    .beside(directives)
            })
            .fold(Shape::default(), Shape::beside))
    }

    /// Just `n` directives.
    fn directives(n: usize) -> Shape {
        Shape {
            directives: n as u64,
            ..Shape::default()
        }
    }

    /// Two selections side by side.
    fn beside(self, other: Shape) -> Shape {
        Shape {
            fields: self.fields.saturating_add(other.fields),
            aliases: self.aliases.saturating_add(other.aliases),
            directives: self.directives.saturating_add(other.directives),
            depth: self.depth.max(other.depth),
            introspection_cost: self
                .introspection_cost
                .saturating_add(other.introspection_cost),
        }
    }
}

/// The longest list each of introspection's list fields can answer in this
/// schema: its types, the most fields of one type, the most arguments of
/// one field or directive, ... Read from the schema's SDL, which leaves out
/// introspection's own types and the built-in scalars and directives; those
/// are added as introspection defines them (`__Type` has 11 fields,
/// `__DirectiveLocation` 19 values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntrospectionSizes {
    types: u64,
    directives: u64,
    fields: u64,
    args: u64,
    input_fields: u64,
    interfaces: u64,
    possible_types: u64,
    enum_values: u64,
}

impl IntrospectionSizes {
    /// Introspection's own types, and the built-in scalars.
    const UNPRINTED_TYPES: u64 = 8 + 5;
    /// The built-in directives, whether printed or not.
    const BUILT_IN_DIRECTIVES: u64 = 5;

    pub fn of_schema(sdl: &str) -> Self {
        let mut sizes = IntrospectionSizes {
            types: Self::UNPRINTED_TYPES,
            directives: Self::BUILT_IN_DIRECTIVES,
            fields: 11,
            args: 1,
            input_fields: 0,
            interfaces: 0,
            possible_types: 0,
            enum_values: 19,
        };
        // The SDL is the schema's own: it parses.
        let Ok(document) = async_graphql::parser::parse_schema(sdl) else {
            return sizes;
        };
        let mut implementers: HashMap<&str, u64> = HashMap::new();
        for definition in &document.definitions {
            let len = |n: usize| n as u64;
            match definition {
                TypeSystemDefinition::Schema(_) => {}
                TypeSystemDefinition::Directive(directive) => {
                    sizes.directives += 1;
                    sizes.args = sizes.args.max(len(directive.node.arguments.len()));
                }
                TypeSystemDefinition::Type(ty) => {
                    sizes.types += 1;
                    let (fields, interfaces) = match &ty.node.kind {
                        TypeKind::Object(object) => (&object.fields, &object.implements),
                        TypeKind::Interface(interface) => {
                            (&interface.fields, &interface.implements)
                        }
                        TypeKind::Union(union) => {
                            let members = len(union.members.len());
                            sizes.possible_types = sizes.possible_types.max(members);
                            continue;
                        }
                        TypeKind::Enum(enumeration) => {
                            let values = len(enumeration.values.len());
                            sizes.enum_values = sizes.enum_values.max(values);
                            continue;
                        }
                        TypeKind::InputObject(input) => {
                            let fields = len(input.fields.len());
                            sizes.input_fields = sizes.input_fields.max(fields);
                            continue;
                        }
                        TypeKind::Scalar => continue,
                    };
                    sizes.fields = sizes.fields.max(len(fields.len()));
                    sizes.interfaces = sizes.interfaces.max(len(interfaces.len()));
                    for field in fields {
                        sizes.args = sizes.args.max(len(field.node.arguments.len()));
                    }
                    for interface in interfaces {
                        *implementers.entry(interface.node.as_str()).or_default() += 1;
                    }
                }
            }
        }
        let most_implementers = implementers.into_values().max().unwrap_or(0);
        sizes.possible_types = sizes.possible_types.max(most_implementers);
        sizes
    }

    /// How many elements introspection's field `name` may answer; 1 for
    /// a field that is not a list of objects.
    fn length(&self, name: &str) -> u64 {
        match name {
            "types" => self.types,
            "directives" => self.directives,
            "fields" => self.fields,
            "args" => self.args,
            "inputFields" => self.input_fields,
            "interfaces" => self.interfaces,
            "possibleTypes" => self.possible_types,
            "enumValues" => self.enum_values,
            _ => 1,
        }
    }
}

/// The root fields that enter introspection.
fn enters_introspection(name: &str) -> bool {
    name == "__schema" || name == "__type"
}

/// Each fragment's shape, measured once.
struct Fragments<'a> {
    sizes: &'a IntrospectionSizes,
    shapes: HashMap<&'a Name, Shape>,
}

impl<'a> Fragments<'a> {
    /// Measures every fragment after the fragments it spreads, so each is
    /// measured once. The walk keeps its own stack (a chain of thousands
    /// of fragments must not exhaust the thread's); a fragment that spreads
    /// itself, directly or not, is refused, as the validator would.
    fn measure(
        document: &'a ExecutableDocument,
        sizes: &'a IntrospectionSizes,
    ) -> Result<Self, ServerError> {
        let mut fragments = Fragments {
            sizes,
            shapes: HashMap::with_capacity(document.fragments.len()),
        };
        // A fragment on the stack is being measured; its spreads come first.
        let mut on_stack: HashSet<&Name> = HashSet::new();
        for root in document.fragments.keys() {
            let mut stack = vec![(root, false)];
            while let Some((name, spreads_done)) = stack.pop() {
                if fragments.shapes.contains_key(name) {
                    continue;
                }
                let Some(fragment) = document.fragments.get(name) else {
                    continue;
                };
                if spreads_done {
                    on_stack.remove(name);
                    let shape = fragments
                        .set(
                            &fragment.node.selection_set.node,
                            is_introspection(&fragment.node),
                        )
                        .beside(Shape::directives(fragment.node.directives.len()));
                    fragments.shapes.insert(name, shape);
                    continue;
                }
                if !on_stack.insert(name) {
                    return Err(spreads_itself(name));
                }
                stack.push((name, true));
                let mut spread = Vec::new();
                spreads(&fragment.node.selection_set.node, &mut spread);
                for inner in spread {
                    if on_stack.contains(inner) {
                        return Err(spreads_itself(inner));
                    }
                    if !fragments.shapes.contains_key(inner) {
                        stack.push((inner, false));
                    }
                }
            }
        }
        Ok(fragments)
    }

    /// The shape of a selection set whose fragments are measured.
    /// `introspection`: whether it selects from introspection's types.
    fn set(&self, set: &'a SelectionSet, introspection: bool) -> Shape {
        let mut shape = Shape::default();
        for selection in &set.items {
            let inner = match &selection.node {
                Selection::Field(field) => {
                    let field = &field.node;
                    let name = field.name.node.as_str();
                    let inside = introspection || enters_introspection(name);
                    let below = self.set(&field.selection_set.node, inside);
                    let introspection_cost = match inside {
                        true => self
                            .sizes
                            .length(name)
                            .saturating_mul(below.introspection_cost)
                            .saturating_add(1),
                        false => below.introspection_cost,
                    };
                    Shape {
                        fields: below.fields.saturating_add(1),
                        aliases: below
                            .aliases
                            .saturating_add(u64::from(field.alias.is_some())),
                        directives: below
                            .directives
                            .saturating_add(field.directives.len() as u64),
                        depth: if inside { 0 } else { below.depth + 1 },
                        introspection_cost,
                    }
                }
                Selection::FragmentSpread(spread) => self
                    .shapes
                    .get(&spread.node.fragment_name.node)
                    .copied()
                    // An unknown fragment: the validator names it.
                    .unwrap_or_default()
                    .beside(Shape::directives(spread.node.directives.len())),
                Selection::InlineFragment(inline) => {
                    let on_introspection = inline
                        .node
                        .type_condition
                        .as_ref()
                        .is_some_and(|c| c.node.on.node.starts_with("__"));
                    self.set(
                        &inline.node.selection_set.node,
                        introspection || on_introspection,
                    )
                    .beside(Shape::directives(inline.node.directives.len()))
                }
            };
            shape = shape.beside(inner);
        }
        shape
    }
}

/// The refusal of a fragment that spreads itself, as the validator's.
fn spreads_itself(fragment: &Name) -> ServerError {
    ErrorClass::Invalid.error(format!("Fragment \"{fragment}\" spreads itself."))
}

/// Whether a fragment selects from one of introspection's types.
fn is_introspection(fragment: &FragmentDefinition) -> bool {
    fragment.type_condition.node.on.node.starts_with("__")
}

/// The fragments a selection set spreads, at any depth within it.
fn spreads<'a>(set: &'a SelectionSet, out: &mut Vec<&'a Name>) {
    for selection in &set.items {
        match &selection.node {
            Selection::Field(field) => spreads(&field.node.selection_set.node, out),
            Selection::FragmentSpread(spread) => out.push(&spread.node.fragment_name.node),
            Selection::InlineFragment(inline) => spreads(&inline.node.selection_set.node, out),
        }
    }
}

#[cfg(test)]
mod tests {
    use async_graphql::parser::parse_query;

    use super::*;

    fn sizes() -> IntrospectionSizes {
        IntrospectionSizes::of_schema(&crate::graphql::sdl())
    }

    fn shape(query: &str) -> Shape {
        Shape::of(&parse_query(query).unwrap(), &sizes()).unwrap()
    }

    #[test]
    fn fields_aliases_and_typename_are_counted() {
        let s = shape("{ a: __typename b: __typename me { id } }");
        assert_eq!((s.fields, s.aliases, s.depth), (4, 2, 2));
    }

    #[test]
    fn spreads_count_their_fragment_each_time() {
        let s = shape("query { ...F ...F x { ...F } } fragment F on Query { a b: c { d } }");
        assert_eq!(s.fields, 3 * 3 + 1);
        assert_eq!(s.aliases, 3);
        assert_eq!(s.depth, 3);
    }

    #[test]
    fn doubling_fragments_are_measured_in_linear_time() {
        let mut query = String::from("query { ...G40 }\nfragment G0 on Query { __typename }\n");
        for level in 1..=40 {
            let below = level - 1;
            query.push_str(&format!(
                "fragment G{level} on Query {{ ...G{below} ...G{below} }}\n"
            ));
        }
        assert_eq!(shape(&query).fields, 1 << 40);
    }

    #[test]
    fn counts_saturate() {
        let mut query = String::from("query { ...G70 }\nfragment G0 on Query { __typename }\n");
        for level in 1..=70 {
            let below = level - 1;
            query.push_str(&format!(
                "fragment G{level} on Query {{ ...G{below} ...G{below} }}\n"
            ));
        }
        assert_eq!(shape(&query).fields, u64::MAX);
    }

    #[test]
    fn nesting_is_read_outside_strings_and_comments() {
        assert_eq!(nesting("{ a(b: [[1]]) { c } }"), 4);
        assert_eq!(nesting("{ a(s: \"{{{[[\\\"(\") }"), 2);
        assert_eq!(nesting("{ a # {{{{\n b }"), 1);
        assert_eq!(nesting("{ a(s: \"\"\" {{ \\\"\"\" [[ \"\"\") }"), 2);
        assert_eq!(nesting("}}}{"), 1);
        assert_eq!(nesting(&"{".repeat(100_000)), 100_000);
    }

    #[test]
    fn a_fragment_cycle_is_refused() {
        let doc = parse_query("{ ...A } fragment A on Query { ...B } fragment B on Query { ...A }")
            .unwrap();
        assert!(Shape::of(&doc, &sizes()).is_err());
    }

    #[test]
    fn a_long_chain_of_fragments_keeps_to_its_own_stack() {
        let mut query = String::from("query { ...F0 }\n");
        for i in 0..20_000 {
            query.push_str(&format!("fragment F{i} on Query {{ a ...F{} }}\n", i + 1));
        }
        query.push_str("fragment F20000 on Query { a }\n");
        assert_eq!(shape(&query).fields, 20_001);
    }

    #[test]
    fn introspection_is_out_of_the_depth_and_costs_by_its_lists() {
        let sizes = sizes();
        let s = shape("{ __schema { types { name fields { name } } } }");
        let (types, fields) = (sizes.length("types"), sizes.length("fields"));
        assert_eq!(s.depth, 0);
        // __schema and types 1 each; each type's name, fields and their names.
        assert_eq!(s.introspection_cost, 2 + types * (1 + 1 + fields));
        // Fragments and repeats cost as if written out.
        let s =
            shape("{ __schema { types { ...T ...T } } } fragment T on __Type { fields { name } }");
        assert_eq!(s.introspection_cost, 2 + types * 2 * (1 + fields));
        let s = shape("{ me { id } __type(name: \"X\") { name } }");
        assert_eq!((s.depth, s.introspection_cost), (2, 2));
    }

    #[test]
    fn sizes_are_the_longest_lists_of_the_schema() {
        let sizes = IntrospectionSizes::of_schema(
            "type Query { a(x: Int, y: Int): Int b: Int c: Int d: Int e: Int f: Int g: Int \
             h: Int i: Int j: Int k: Int l: Int } \
             enum E { A B } union U = Query | Query | Query | Query | Query | Query \
             input I { a: Int b: Int }",
        );
        assert_eq!(
            sizes.length("types"),
            4 + IntrospectionSizes::UNPRINTED_TYPES
        );
        assert_eq!(sizes.length("fields"), 12);
        assert_eq!(sizes.length("args"), 2);
        assert_eq!(sizes.length("enumValues"), 19);
        assert_eq!(sizes.length("possibleTypes"), 6);
        assert_eq!(sizes.length("inputFields"), 2);
        assert_eq!(sizes.length("name"), 1);
    }
}
