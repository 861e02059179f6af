use async_trait::async_trait;
use idconsent_notification::{Channel, Message, MessageTransport, TransportError};

/// The development "transport": messages stay in the outbox, which `GET /v1/dev/messages`
/// reads. Used for every channel when `IDC_MODE=dev`; never in production.
#[derive(Debug, Clone, Copy)]
pub struct DevMailbox {
    channel: Channel,
}

impl DevMailbox {
    pub fn new(channel: Channel) -> Self {
        Self { channel }
    }
}

#[async_trait]
impl MessageTransport for DevMailbox {
    fn channel(&self) -> Channel {
        self.channel
    }

    fn name(&self) -> &'static str {
        "dev-mailbox"
    }

    fn keeps_content(&self) -> bool {
        true
    }

    async fn deliver(&self, _message: &Message) -> Result<(), TransportError> {
        Ok(())
    }
}
