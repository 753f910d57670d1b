//! The functions of a unit while it is built: their signatures (known before any body,
//! so calls resolve), the generic device functions as templates, and the instances that
//! calls ask for, made on demand.

use super::super::kernel_ir::{FunctionId, GenericArg, InstanceOf};
use super::super::CompileError;
use super::builder::Signature;
use super::generics::{self, GenericParam};
use proc_macro2::Span;
use std::cell::RefCell;
use std::collections::HashMap;

/// At most this many instances of generic device functions in one unit (a generic
/// function that calls itself with ever new arguments would make them forever).
const MAX_DEVICE_INSTANCES: usize = 1024;

/// A generic device function.
pub struct Template {
    /// The function as written.
    pub item: syn::ItemFn,
    /// Its generic parameters.
    pub params: Vec<GenericParam>,
    /// Its parameters' types as written (for inferring arguments from a call's).
    pub declared: Vec<syn::Type>,
}

/// A function waiting for its body to be built.
pub struct Pending {
    /// The function (an instance is already substituted and renamed).
    pub item: syn::ItemFn,
    /// For an instance: of what.
    pub instance_of: Option<InstanceOf>,
}

/// The unit's functions.
#[derive(Default)]
pub struct Registry {
    /// The `const` items of the unit's module, by name.
    consts: HashMap<String, syn::ItemConst>,
    sigs: RefCell<Vec<Signature>>,
    templates: HashMap<String, Template>,
    instances: RefCell<HashMap<(String, Vec<GenericArg>), FunctionId>>,
    pending: RefCell<Vec<Pending>>,
}

impl Registry {
    /// Adds the module's `const` items (a name defined twice is an error).
    pub fn add_consts(&mut self, consts: &[syn::ItemConst]) -> Result<(), CompileError> {
        for c in consts {
            let name = c.ident.to_string();
            if self.consts.insert(name.clone(), c.clone()).is_some() {
                return Err(CompileError::new(
                    c.ident.span(),
                    format!("`{name}` is defined twice in this module"),
                ));
            }
        }
        Ok(())
    }

    /// The module's `const` item named `name`.
    pub fn constant(&self, name: &str) -> Option<&syn::ItemConst> {
        self.consts.get(name)
    }

    /// Adds a function with a body to build; returns its id.
    pub fn add(&self, sig: Signature, pending: Pending) -> Result<FunctionId, CompileError> {
        let mut sigs = self.sigs.borrow_mut();
        if sigs.iter().any(|o| o.name == sig.name) || self.templates.contains_key(&sig.name) {
            return Err(CompileError::new(
                sig.span,
                format!("`{}` is defined twice in this unit", sig.name),
            ));
        }
        sigs.push(sig);
        self.pending.borrow_mut().push(pending);
        Ok(sigs.len() - 1)
    }

    /// Adds a generic device function.
    pub fn add_template(&mut self, t: Template) -> Result<(), CompileError> {
        let name = t.item.sig.ident.to_string();
        if self.templates.contains_key(&name) || self.find(&name).is_some() {
            return Err(CompileError::new(
                t.item.sig.ident.span(),
                format!("`{name}` is defined twice in this unit"),
            ));
        }
        self.templates.insert(name, t);
        Ok(())
    }

    /// The functions added since the last call, in id order.
    pub fn take_pending(&self) -> Vec<Pending> {
        std::mem::take(&mut *self.pending.borrow_mut())
    }

    /// The signature of function `id`.
    pub fn sig(&self, id: FunctionId) -> Signature {
        self.sigs.borrow()[id].clone()
    }

    /// Whether any function is a kernel.
    pub fn has_kernel(&self) -> bool {
        self.sigs.borrow().iter().any(|s| s.is_kernel)
    }

    /// The function named `name` (not a template).
    pub fn find(&self, name: &str) -> Option<FunctionId> {
        self.sigs.borrow().iter().position(|s| s.name == name)
    }

    /// The generic device function named `name`.
    pub fn template(&self, name: &str) -> Option<&Template> {
        self.templates.get(name)
    }

    /// The instance of template `name` for `args`, made (and queued for building) the
    /// first time it is asked for.
    pub fn instance(
        &self,
        name: &str,
        args: Vec<GenericArg>,
        span: Span,
    ) -> Result<FunctionId, CompileError> {
        let key = (name.to_string(), args);
        if let Some(id) = self.instances.borrow().get(&key) {
            return Ok(*id);
        }
        let t = self
            .templates
            .get(name)
            .ok_or_else(|| CompileError::new(span, format!("`{name}` is not generic")))?;
        if self.instances.borrow().len() >= MAX_DEVICE_INSTANCES {
            return Err(CompileError::new(
                span,
                format!("more than {MAX_DEVICE_INSTANCES} instances of generic device functions: does `{name}` call itself with new generic arguments?"),
            ));
        }
        let item = generics::instantiate(&t.item, &t.params, &key.1);
        let sig = super::signature(&item, false)?;
        let id = self.add(
            sig,
            Pending {
                item,
                instance_of: Some(InstanceOf {
                    generic: name.to_string(),
                    args: key.1.clone(),
                }),
            },
        )?;
        self.instances.borrow_mut().insert(key, id);
        Ok(id)
    }
}
