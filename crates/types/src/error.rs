//! Typed SQL errors carrying a PostgreSQL SQLSTATE, so drivers' retry and error handling work.

use std::fmt;

/// The SQLSTATE classes this engine raises (names follow PostgreSQL's errcodes appendix).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum SqlState {
    SyntaxError,
    UndefinedTable,
    UndefinedColumn,
    UndefinedObject,
    UndefinedFunction,
    UndefinedParameter,
    AmbiguousColumn,
    DuplicateTable,
    DuplicateObject,
    DuplicateColumn,
    DatatypeMismatch,
    GroupingError,
    InvalidColumnReference,
    InvalidTableDefinition,
    UniqueViolation,
    NotNullViolation,
    DivisionByZero,
    NumericValueOutOfRange,
    StringDataRightTruncation,
    InvalidTextRepresentation,
    InvalidParameterValue,
    CardinalityViolation,
    FeatureNotSupported,
    StatementTooComplex,
    ProgramLimitExceeded,
    TooManyColumns,
    ActiveSqlTransaction,
    NoActiveSqlTransaction,
    /// The transaction must be retried (40001).
    SerializationFailure,
    /// The read timestamp is below the garbage-collection watermark (72000).
    SnapshotTooOld,
    /// A peer sent malformed protocol data (e.g. an undecodable predicate).
    ProtocolViolation,
    InternalError,
    // Appended (the serialized index of each variant is part of the wire format).
    InvalidEscapeSequence,
    /// Bad input for a date or timestamp (22007).
    InvalidDatetimeFormat,
    /// Several operators fit equally well (42725).
    AmbiguousFunction,
    /// A date or time field out of range (22008).
    DatetimeFieldOverflow,
    IntervalFieldOverflow,
    /// ROLLBACK TO / RELEASE of a savepoint that does not exist (3B001).
    InvalidSavepointSpecification,
    /// A malformed regular expression (2201B).
    InvalidRegularExpression,
    /// nextval past a sequence's MAXVALUE / MINVALUE (2200H).
    SequenceGeneratorLimitExceeded,
    /// currval before nextval in the session (55000).
    ObjectNotInPrerequisiteState,
    /// An explicit value for a GENERATED ALWAYS identity column (428C9).
    GeneratedAlways,
    /// DROP of an object another one needs (2BP01).
    DependentObjectsStillExist,
    /// Internal: a statement needs more values of the sequence named in the message than
    /// its client handed it; the client takes a block and runs it again (`sequence.rs`).
    SequenceValuesNeeded,
    /// A window function where none is allowed, nested, or a bad window definition (42P20).
    WindowingError,
    /// OVER on a function that is neither a window function nor an aggregate (42809).
    WrongObjectType,
    /// A NULL frame offset (22004).
    NullValueNotAllowed,
    /// A negative frame offset (22013).
    InvalidPrecedingOrFollowingSize,
    /// ntile(n) with n <= 0 (22014).
    InvalidArgumentForNtile,
    /// nth_value(x, n) with n <= 0 (22016).
    InvalidArgumentForNthValue,
    /// A malformed WITH RECURSIVE query (42P19).
    InvalidRecursion,
    ForeignKeyViolation,
    CheckViolation,
    InvalidForeignKey,
    InvalidName,
    /// An identifier longer than Pistou keeps (42622).
    NameTooLong,
    /// An expression whose type cannot be determined, e.g. `ARRAY[]` (42P18).
    IndeterminateDatatype,
    /// A cast between types that have none (42846).
    CannotCoerce,
    /// A view whose definition reads itself (42P17).
    InvalidObjectDefinition,
    /// A FROM list naming a table or alias twice (42712).
    DuplicateAlias,
    /// A character with no equivalent in the target encoding, e.g. `\u0000` in jsonb (22P05).
    UntranslatableCharacter,
    /// Internal: a statement calls `setval` with a setting its client has not applied yet;
    /// the client writes the sequence's counter and runs it again (`sequence.rs`).
    SequenceSetNeeded,
    /// Internal: a replica's first attempt at a statement on its protocol thread used up its
    /// slice of work; the replica runs the statement again elsewhere (`Interrupt`).
    WorkSliceUsed,
    /// The statement's result is no longer wanted (57014).
    QueryCanceled,
}

impl SqlState {
    /// The five-character SQLSTATE code.
    pub fn code(self) -> &'static str {
        use SqlState::*;
        match self {
            SyntaxError => "42601",
            UndefinedTable => "42P01",
            UndefinedColumn => "42703",
            UndefinedObject => "42704",
            UndefinedFunction => "42883",
            UndefinedParameter => "42P02",
            AmbiguousColumn => "42702",
            DuplicateTable => "42P07",
            DuplicateObject => "42710",
            DuplicateColumn => "42701",
            DatatypeMismatch => "42804",
            GroupingError => "42803",
            InvalidColumnReference => "42P10",
            InvalidTableDefinition => "42P16",
            UniqueViolation => "23505",
            ForeignKeyViolation => "23503",
            CheckViolation => "23514",
            InvalidForeignKey => "42830",
            DependentObjectsStillExist => "2BP01",
            InvalidName => "42602",
            NameTooLong => "42622",
            NotNullViolation => "23502",
            DivisionByZero => "22012",
            NumericValueOutOfRange => "22003",
            StringDataRightTruncation => "22001",
            InvalidTextRepresentation => "22P02",
            InvalidEscapeSequence => "22025",
            InvalidDatetimeFormat => "22007",
            AmbiguousFunction => "42725",
            DatetimeFieldOverflow => "22008",
            IntervalFieldOverflow => "22015",
            InvalidSavepointSpecification => "3B001",
            InvalidRegularExpression => "2201B",
            SequenceGeneratorLimitExceeded => "2200H",
            ObjectNotInPrerequisiteState => "55000",
            GeneratedAlways => "428C9",
            SequenceValuesNeeded => "XX000",
            WindowingError => "42P20",
            WrongObjectType => "42809",
            NullValueNotAllowed => "22004",
            InvalidPrecedingOrFollowingSize => "22013",
            InvalidArgumentForNtile => "22014",
            InvalidArgumentForNthValue => "22016",
            InvalidRecursion => "42P19",
            IndeterminateDatatype => "42P18",
            InvalidParameterValue => "22023",
            CardinalityViolation => "21000",
            FeatureNotSupported => "0A000",
            StatementTooComplex => "54001",
            ProgramLimitExceeded => "54000",
            TooManyColumns => "54011",
            ActiveSqlTransaction => "25001",
            NoActiveSqlTransaction => "25P01",
            ProtocolViolation => "08P01",
            SerializationFailure => "40001",
            SnapshotTooOld => "72000",
            InternalError => "XX000",
            CannotCoerce => "42846",
            InvalidObjectDefinition => "42P17",
            DuplicateAlias => "42712",
            UntranslatableCharacter => "22P05",
            SequenceSetNeeded => "XX000",
            WorkSliceUsed => "XX000",
            QueryCanceled => "57014",
        }
    }
}

/// An error with its SQLSTATE; `Display` ends with `(SQLSTATE xxxxx)` so tests can match on it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SqlError {
    pub state: SqlState,
    pub message: String,
}

impl SqlError {
    pub fn new(state: SqlState, message: impl Into<String>) -> Self {
        SqlError { state, message: message.into() }
    }

    /// The five-character SQLSTATE code.
    pub fn sqlstate(&self) -> &'static str {
        self.state.code()
    }

    pub fn unsupported(what: impl fmt::Display) -> Self {
        SqlError::new(SqlState::FeatureNotSupported, format!("{what} is not supported"))
    }
}

impl fmt::Display for SqlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (SQLSTATE {})", self.message, self.state.code())
    }
}

impl std::error::Error for SqlError {}

pub type Result<T, E = SqlError> = std::result::Result<T, E>;

/// Shorthand for building an `Err(SqlError)`.
pub fn err<T>(state: SqlState, message: impl Into<String>) -> Result<T> {
    Err(SqlError::new(state, message))
}
