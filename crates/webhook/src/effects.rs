//! What a state change writes besides itself.

use idconsent_kernel::Charge;

use crate::model::Outbox;

/// The side effects of a state change that its store writes **in the same transaction**: the
/// events it reports (the outbox) and the usage it costs (quota charges). Either all of them and
/// the change are written, or nothing is.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Effects {
    pub outbox: Vec<Outbox>,
    pub charges: Vec<Charge>,
}

impl Effects {
    /// Just these events, costing nothing.
    pub fn events(outbox: Vec<Outbox>) -> Self {
        Self {
            outbox,
            charges: Vec::new(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.outbox.is_empty() && self.charges.is_empty()
    }

    /// Adds another change's effects to these.
    pub fn extend(&mut self, other: Effects) {
        self.outbox.extend(other.outbox);
        self.charges.extend(other.charges);
    }
}
