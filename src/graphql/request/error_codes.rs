//! The `extensions.code` of async-graphql's own errors, which carry none.
//! Each is told from where the error arose (the step of the request that
//! reported it, and the part of the document it points at), never from
//! its wording, which async-graphql may change in any release:
//! - parsing (`parsed::parse`): past the parser's recursion limit is
//!   QUERY_TOO_COMPLEX, any other failure GRAPHQL_VALIDATION_FAILED;
//! - async-graphql's parse step, which gets the document parsed and only
//!   checks how deep selections nest through the fragments they spread:
//!   QUERY_TOO_COMPLEX (`analysis::Validated`);
//! - validation ([`Kept::code_validation`]): an error at the name of an
//!   argument the schema defines is about its value, INVALID_PARAMETER; so
//!   is one at a field whose cost async-graphql could not compute because a
//!   value the cost reads does not parse; any other GRAPHQL_VALIDATION_FAILED;
//! - choosing the operation to run: GRAPHQL_VALIDATION_FAILED;
//! - execution ([`code_execution`]): an error at an argument's value whose
//!   variables all have values is that value failing to parse as its type
//!   (a scalar, enum or input object refusing it), INVALID_PARAMETER; any
//!   other (such as a variable without a value) GRAPHQL_VALIDATION_FAILED.
//!
//! The server's own refusals code themselves and are left as they are.

use std::collections::HashMap;

use async_graphql::indexmap::IndexMap;
use async_graphql::parser::types::{
    Directive, ExecutableDocument, Field, OperationType, Selection, SelectionSet,
    VariableDefinition,
};
use async_graphql::registry::{MetaField, MetaInputValue, MetaType, MetaTypeName, Registry};
use async_graphql::{InputType, Name, Pos, Positioned, Request, ServerError, Value, Variables};

use super::parsed;
use crate::query::products::ProductFilter;

/// What an error says is wrong with a request, as its `extensions.code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// An argument's value does not fit its type, as REST's
    /// `invalid_parameter`.
    InvalidParameter,
    /// The document asks for more than the server's limits allow, or nests
    /// deeper than the parser and the validator follow.
    TooComplex,
    /// Any other request GraphQL refuses: unparsable, breaking a validation
    /// rule, naming no operation of its document.
    Invalid,
}

impl ErrorClass {
    pub fn code(self) -> &'static str {
        match self {
            ErrorClass::InvalidParameter => "INVALID_PARAMETER",
            ErrorClass::TooComplex => "QUERY_TOO_COMPLEX",
            ErrorClass::Invalid => "GRAPHQL_VALIDATION_FAILED",
        }
    }

    /// A new error of this class.
    pub fn error(self, message: String) -> ServerError {
        let mut error = ServerError::new(message, None);
        self.mark(&mut error);
        error
    }

    /// Gives `error` this class's code, unless it has a code already.
    pub fn mark(self, error: &mut ServerError) {
        let extensions = error.extensions.get_or_insert_with(Default::default);
        if extensions.get("code").is_none() {
            extensions.set("code", self.code());
        }
    }
}

/// Whether `error` has no code yet.
fn uncoded(error: &ServerError) -> bool {
    error
        .extensions
        .as_ref()
        .is_none_or(|extensions| extensions.get("code").is_none())
}

/// Codes the errors raised while executing `document`: `missing` are the
/// variables of the operation run that have no value
/// ([`missing_variables`]).
pub fn code_execution(errors: &mut [ServerError], document: &ExecutableDocument, missing: &[Name]) {
    if !errors.iter().any(uncoded) {
        return;
    }
    // Any value will do for a variable that has one: only whether each
    // argument can be read is asked.
    let variable = |name: &Name| match missing.contains(name) {
        true => Given::Nothing,
        false => Given::Value(Value::Null),
    };
    let sites = Sites::of(document, None, &variable);
    for error in errors {
        let class = match error.locations.as_slice() {
            // async-graphql reports a value it cannot parse at the value.
            [at] if sites.readable.get(at) == Some(&true) => ErrorClass::InvalidParameter,
            _ => ErrorClass::Invalid,
        };
        class.mark(error);
    }
}

/// The variables of the operation `name` (or the document's only one)
/// that have no value: not sent, and neither nullable nor defaulted. An
/// argument that uses one cannot be read, let alone parsed.
pub fn missing_variables(
    document: &ExecutableDocument,
    operation: Option<&str>,
    variables: &Variables,
) -> Vec<Name> {
    definitions(document, operation)
        .iter()
        .filter(|d| !variables.contains_key(&d.node.name.node) && d.node.default_value().is_none())
        .map(|d| d.node.name.node.clone())
        .collect()
}

/// The variable definitions of the operation `name`, or of the
/// document's only operation; none when there is no such operation (then
/// nothing runs).
fn definitions<'a>(
    document: &'a ExecutableDocument,
    name: Option<&str>,
) -> &'a [Positioned<VariableDefinition>] {
    document
        .operations
        .iter()
        .find(|(operation, _)| name.is_none() || operation.map(Name::as_str) == name)
        .map_or(&[], |(_, operation)| &operation.node.variable_definitions)
}

/// A request's query, operation and variables, kept by an extension to
/// place the errors its later steps report. The document is parsed anew
/// only when an error needs placing.
pub struct Kept {
    query: String,
    operation: Option<String>,
    variables: Variables,
}

impl Kept {
    pub fn of(request: &Request) -> Self {
        Kept {
            query: request.query.clone(),
            operation: request.operation_name.clone(),
            variables: request.variables.clone(),
        }
    }

    /// Codes the errors validation reported, reading the document against
    /// `registry` as async-graphql's validator reads it.
    pub fn code_validation(&self, errors: &mut [ServerError], registry: &Registry) {
        let Some(document) = self.document(errors) else {
            return;
        };
        // A variable's value, as async-graphql reads it: one the operation
        // defines, sent or else defaulted (null when nullable).
        let definitions = definitions(&document, self.operation.as_deref());
        let variable = |name: &Name| {
            let Some(definition) = definitions.iter().find(|d| d.node.name.node == *name) else {
                return Given::Undefined;
            };
            let sent = self.variables.get(name);
            match sent.or_else(|| definition.node.default_value()) {
                Some(value) => Given::Value(value.clone()),
                None => Given::Nothing,
            }
        };
        let sites = Sites::of(&document, Some(registry), &variable);
        // How many errors were placed at each position so far.
        let mut placed: HashMap<Pos, usize> = HashMap::new();
        for error in errors {
            let class = match error.locations.as_slice() {
                [at] => {
                    let count = placed.entry(*at).or_default();
                    *count += 1;
                    match (sites.names.get(at), sites.costed.get(at)) {
                        (Some(argument), _) => argument.class(*count),
                        (None, Some(costed)) => costed.class(*count),
                        (None, None) => ErrorClass::Invalid,
                    }
                }
                _ => ErrorClass::Invalid,
            };
            class.mark(error);
        }
    }

    /// Codes the errors raised while executing, and any other error no step
    /// coded (choosing the operation).
    pub fn code_execution(&self, errors: &mut [ServerError]) {
        if let Some(document) = self.document(errors) {
            let operation = self.operation.as_deref();
            let missing = missing_variables(&document, operation, &self.variables);
            code_execution(errors, &document, &missing);
        }
    }

    /// The document, parsed anew if some error needs placing; otherwise
    /// `None`, as when it does not parse, which cannot happen (it parsed
    /// before): then its errors are GRAPHQL_VALIDATION_FAILED.
    fn document(&self, errors: &mut [ServerError]) -> Option<ExecutableDocument> {
        if !errors.iter().any(uncoded) {
            return None;
        }
        let document = parsed::parse(&self.query).ok();
        if document.is_none() {
            errors.iter_mut().for_each(|e| ErrorClass::Invalid.mark(e));
        }
        document
    }
}

/// What a request gives one of its variables.
enum Given {
    /// The operation does not define the variable.
    Undefined,
    /// No value: not sent, and neither nullable nor defaulted.
    Nothing,
    Value(Value),
}

/// What a request gives each variable.
type Variable<'v> = &'v dyn Fn(&Name) -> Given;

/// One argument of a field or directive, read.
struct Argument<'a> {
    name: &'a Positioned<Name>,
    /// Where its value sits.
    at: Pos,
    /// Its value, variables replaced; `None` when one has no value.
    value: Option<Value>,
    /// Whether it uses a variable the operation does not define.
    undefined: bool,
}

/// An argument's name in a document.
#[derive(Clone, Copy)]
struct ArgumentName {
    /// Whether the schema defines it for its field or directive: only
    /// then does the validator check its value.
    known: bool,
    /// Whether an earlier argument of the same field or directive has its
    /// name.
    repeated: bool,
    /// Whether its value uses a variable the operation does not define.
    undefined: bool,
}

impl ArgumentName {
    /// The class of the `nth` error (from 1) the validator reports at this
    /// name. There it reports an unknown argument, a repeated one (once,
    /// before anything else there), a variable the operation does not
    /// define (of an anonymous operation: a named one's error also points
    /// at the operation), and a known argument's value that does not fit
    /// its type.
    fn class(self, nth: usize) -> ErrorClass {
        if !self.known || self.undefined || (self.repeated && nth == 1) {
            ErrorClass::Invalid
        } else {
            ErrorClass::InvalidParameter
        }
    }
}

/// A field whose cost the schema computes.
#[derive(Clone, Copy)]
struct Costed {
    /// How many errors the validator's rules report at it: its missing
    /// subfields (or subfields of a leaf), and each required argument it
    /// lacks. They come before the errors of the complexity pass, which
    /// runs after the rules.
    rule_errors: usize,
    /// Why its cost cannot be computed, if it cannot ([`cost_failure`]).
    failure: Option<ErrorClass>,
}

impl Costed {
    /// The class of the `nth` error (from 1) reported at the field.
    fn class(self, nth: usize) -> ErrorClass {
        match self.failure {
            Some(failure) if nth > self.rule_errors => failure,
            _ => ErrorClass::Invalid,
        }
    }
}

/// Where a document's arguments and costed fields sit, read against the
/// schema (when given) as async-graphql's validator reads them: each
/// fragment once from its type condition, then each operation from its
/// root type.
struct Sites<'a> {
    registry: Option<&'a Registry>,
    variable: Variable<'a>,
    /// Every argument's name, of fields and directives.
    names: HashMap<Pos, ArgumentName>,
    /// Whether each argument's value can be read (its variables all have
    /// values), by the position of the value.
    readable: HashMap<Pos, bool>,
    /// Each field whose cost the schema computes, by its position.
    costed: HashMap<Pos, Costed>,
}

impl<'a> Sites<'a> {
    fn of(
        document: &'a ExecutableDocument,
        registry: Option<&'a Registry>,
        variable: Variable<'a>,
    ) -> Self {
        let mut sites = Sites {
            registry,
            variable,
            names: HashMap::new(),
            readable: HashMap::new(),
            costed: HashMap::new(),
        };
        for fragment in document.fragments.values() {
            let fragment = &fragment.node;
            let on = sites.named(&fragment.type_condition.node.on.node);
            sites.directives(&fragment.directives);
            sites.selections(&fragment.selection_set.node, on);
        }
        for (_, operation) in document.operations.iter() {
            let operation = &operation.node;
            let root = registry.and_then(|registry| match operation.ty {
                OperationType::Query => Some(&registry.query_type),
                OperationType::Mutation => registry.mutation_type.as_ref(),
                OperationType::Subscription => registry.subscription_type.as_ref(),
            });
            let root = root.and_then(|name| sites.named(name));
            sites.directives(&operation.directives);
            sites.selections(&operation.selection_set.node, root);
        }
        sites
    }

    fn named(&self, name: &str) -> Option<&'a MetaType> {
        self.registry.and_then(|registry| registry.types.get(name))
    }

    /// A selection set on type `on`.
    fn selections(&mut self, set: &'a SelectionSet, on: Option<&'a MetaType>) {
        for selection in &set.items {
            match &selection.node {
                // The validator reads no argument of `__typename`.
                Selection::Field(field) if field.node.name.node == "__typename" => {}
                Selection::Field(positioned) => {
                    let field = &positioned.node;
                    let schema = on.and_then(|on| on.field_by_name(&field.name.node));
                    let arguments = self.read(Arguments::Field(field));
                    self.arguments(&arguments, schema.map(|s| &s.args));
                    let inner = schema.and_then(|schema| {
                        self.registry
                            .and_then(|registry| registry.concrete_type_by_name(&schema.ty))
                    });
                    // async-graphql computes costs of object types' fields.
                    if let (Some(MetaType::Object { .. }), Some(schema)) = (on, schema)
                        && schema.compute_complexity.is_some()
                    {
                        let costed = Costed {
                            rule_errors: rule_errors(field, schema, inner),
                            failure: cost_failure(&arguments, schema),
                        };
                        self.costed.insert(positioned.pos, costed);
                    }
                    self.directives(&field.directives);
                    self.selections(&field.selection_set.node, inner);
                }
                Selection::FragmentSpread(spread) => self.directives(&spread.node.directives),
                Selection::InlineFragment(inline) => {
                    let inline = &inline.node;
                    let inner = match &inline.type_condition {
                        Some(condition) => self.named(&condition.node.on.node),
                        None => on,
                    };
                    self.directives(&inline.directives);
                    self.selections(&inline.selection_set.node, inner);
                }
            }
        }
    }

    fn directives(&mut self, directives: &'a [Positioned<Directive>]) {
        for directive in directives {
            let directive = &directive.node;
            let schema = self
                .registry
                .and_then(|registry| registry.directives.get(directive.name.node.as_str()));
            let arguments = self.read(Arguments::Directive(directive));
            self.arguments(&arguments, schema.map(|s| &s.args));
        }
    }

    /// The arguments of a field or directive, read. async-graphql does not
    /// name the type of the parser's values, so they are read where met.
    fn read(&self, of: Arguments<'a>) -> Vec<Argument<'a>> {
        let arguments = match of {
            Arguments::Field(field) => &field.arguments,
            Arguments::Directive(directive) => &directive.arguments,
        };
        let variable = |name: Name| match (self.variable)(&name) {
            Given::Value(value) => Ok(value),
            Given::Undefined | Given::Nothing => Err(()),
        };
        let defined = |name: Name| match (self.variable)(&name) {
            Given::Undefined => Err(()),
            Given::Nothing | Given::Value(_) => Ok(Value::Null),
        };
        arguments
            .iter()
            .map(|(name, value)| Argument {
                name,
                at: value.pos,
                value: value.node.clone().into_const_with(variable).ok(),
                undefined: value.node.clone().into_const_with(defined).is_err(),
            })
            .collect()
    }

    /// Records the arguments of one field or directive; `schema`, those it
    /// defines.
    fn arguments(
        &mut self,
        arguments: &[Argument<'a>],
        schema: Option<&IndexMap<String, MetaInputValue>>,
    ) {
        for (i, argument) in arguments.iter().enumerate() {
            let name = &argument.name.node;
            let known = schema.is_some_and(|defined| defined.contains_key(name.as_str()));
            let repeated = arguments[..i].iter().any(|other| other.name.node == *name);
            let undefined = argument.undefined;
            let recorded = ArgumentName {
                known,
                repeated,
                undefined,
            };
            self.names.insert(argument.name.pos, recorded);
            self.readable.insert(argument.at, argument.value.is_some());
        }
    }
}

/// What arguments belong to.
enum Arguments<'a> {
    Field(&'a Field),
    Directive(&'a Directive),
}

/// Why async-graphql could not compute the cost of a field, given its
/// `arguments`, if it could not. The cost of each connection
/// (`cost/scans.rs`) reads its `Int` arguments `first` and `last`, and
/// that of the products their `filter`: one that does not parse is a value
/// that does not fit its type; one with a variable that has no value is not.
fn cost_failure(arguments: &[Argument], schema: &MetaField) -> Option<ErrorClass> {
    arguments.iter().find_map(|argument| {
        let parses: fn(Value) -> bool = match schema.args.get(argument.name.node.as_str()) {
            Some(defined) if defined.ty == "Int" => |v| Option::<i32>::parse(Some(v)).is_ok(),
            Some(defined) if defined.ty == "Int!" => |v| i32::parse(Some(v)).is_ok(),
            Some(defined) if defined.ty == "ProductFilterInput" => {
                |v| Option::<ProductFilter>::parse(Some(v)).is_ok()
            }
            _ => return None,
        };
        match argument.value.clone().map(parses) {
            None => Some(ErrorClass::Invalid),
            Some(true) => None,
            Some(false) => Some(ErrorClass::InvalidParameter),
        }
    })
}

/// How many errors the validator's rules report at `field` itself, of
/// type `ty` in the schema: a missing selection of subfields (or a
/// selection on a leaf), and each required argument not given.
fn rule_errors(field: &Field, schema: &MetaField, ty: Option<&MetaType>) -> usize {
    let selects = !field.selection_set.node.items.is_empty();
    let selection = ty.is_some_and(|ty| ty.is_leaf() == selects);
    let missing = schema.args.values().filter(|argument| {
        MetaTypeName::create(&argument.ty).is_non_null()
            && argument.default_value.is_none()
            && !field
                .arguments
                .iter()
                .any(|(name, _)| name.node == argument.name)
    });
    usize::from(selection) + missing.count()
}
