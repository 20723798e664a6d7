//! How a wrapped Rust type becomes a Ruby class: the class without an allocator, and its private constructors.

use magnus::{prelude::*, Error, RClass, RModule, Ruby};

/// Defines the private class method `$name` (`"_new"`, `"_restore"`, `"_from_json"`) on `$singleton`: `$make` with
/// the method's `$arity` arguments, its result wrapped as an instance of the receiver, so that a subclass's `new`
/// makes an instance of the subclass (with its methods), not of the gem's class.
macro_rules! constructor {
    ($singleton:expr, $name:literal, $make:path, $arity:tt, $($arg:ident),+) => {
        $singleton.define_private_method(
            $name,
            magnus::method!(
                |ruby: &magnus::Ruby, class: magnus::RClass, $($arg: magnus::Value),+| {
                    $make(ruby, $($arg),+).map(|made| ruby.obj_wrap_as(made, class))
                },
                $arity
            ),
        )
    };
}
pub(crate) use constructor;

/// `LeaseMachines::Name`, the class of a wrapped Rust type, without an allocator (only its private `_new` makes
/// one), and its singleton class, where its private class methods go.
pub(crate) fn wrapped_class(ruby: &Ruby, module: RModule, name: &str) -> Result<(RClass, RClass), Error> {
    let class = module.define_class(name, ruby.class_object())?;
    class.undef_default_alloc_func();
    Ok((class, class.singleton_class()?))
}
