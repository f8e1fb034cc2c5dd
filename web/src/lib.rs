//! The nsqlab visualiser.
