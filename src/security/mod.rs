//! The path every datagram takes between the socket and the node, in both directions:
//! [`wire`] decodes and encodes the one protobuf envelope and makes and checks its
//! HMAC tag with the [`keyring`]; [`gate`] adds what a single datagram cannot show
//! (receiver binding, source address, the [`replay`] windows); [`droplog`] logs what is
//! refused at a bounded rate. They sit together because each is a step of one check
//! that must never panic on input from the network (docs/security.md).

pub mod droplog;
pub mod gate;
pub mod keyring;
pub mod replay;
pub mod wire;
