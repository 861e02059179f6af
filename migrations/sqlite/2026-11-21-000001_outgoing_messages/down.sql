DROP TABLE outgoing_messages;
