//! The one shape every builder's plain setters share, written once.

/// Builder setters that store their argument and return the builder:
///
/// ```ignore
/// setters! {
///     /// Docs for the setter.
///     max_step(max_step: u64) => self.max_step = max_step;
///     /// An optional setting.
///     schedule_interval(every: Duration) => self.schedule_interval = Some(every);
/// }
/// ```
macro_rules! setters {
    ($(
        $(#[$attr:meta])*
        $name:ident($arg:ident: $ty:ty) => self.$field:ident = $value:expr;
    )*) => {
        $(
            $(#[$attr])*
            pub fn $name(mut self, $arg: $ty) -> Self {
                self.$field = $value;
                self
            }
        )*
    };
}
