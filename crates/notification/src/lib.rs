#![doc = include_str!("../README.md")]

mod dispatcher;
mod invitations;
mod limits;
mod message;
mod notifier;
pub mod ports;

#[cfg(feature = "contract")]
pub mod contract;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
#[cfg(feature = "contract")]
pub mod transport_contract;

pub use dispatcher::{DispatchReport, Dispatcher, RetryPolicy};
pub use invitations::{
    InvitationError, Invitations, Invitee, SANDBOX_TEAM_ONLY, SandboxRecipients, TeamDirectory,
    TeamDirectoryError,
};
pub use limits::{SendLimitError, SendLimitSettings, SendLimits, Sender};
pub use message::{Address, Channel, DeliveryStatus, InvalidAddress, Message, NewMessage};
pub use notifier::Notifier;
pub use ports::{
    MessageStore, MessageStoreError, MessageTransport, NotificationSender, NotifyError, Nudge,
    TransportError,
};
