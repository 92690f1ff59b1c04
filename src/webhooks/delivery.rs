// TEMPORARY local stand-in until the webhooks branch merges; never committed.
use crate::clock::Clock;
use crate::config::WebhookConfig;
use sea_orm::{DatabaseConnection, DbErr};
pub struct Sender;
impl Sender {
    pub fn new(_: &WebhookConfig) -> Self {
        Sender
    }
}
#[derive(Debug, Default)]
pub struct DeliveryReport;
pub async fn deliver_due(
    _: &DatabaseConnection,
    _: &dyn Clock,
    _: &Sender,
) -> Result<DeliveryReport, DbErr> {
    Ok(DeliveryReport)
}
