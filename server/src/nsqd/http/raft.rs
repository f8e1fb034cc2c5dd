//! nsqlab's replication endpoints (only with `--replicas`; otherwise, as in nsqd, no such
//! paths: 404 `NOT_FOUND`):
//!
//! - `GET /raft/status`: this node's view of its group: term, role, leader, voters, commit
//!   and applied index, the index its log starts after (`snapshot`), whether it is still
//!   catching up after starting with nothing on its disk (`catching_up`), and (on the
//!   leader) how far each voter's log matches (`lag`).
//! - `POST /raft/add?id=<node-id>&address=<host>:<port>`: on the leader, add a voter that
//!   reaches the group at `address` (its `--raft-address`; start it with `--raft-join`).
//! - `POST /raft/remove?id=<node-id>`: on the leader, remove a voter (one whose machine or
//!   disk is gone, replaced by a node with a new id).
//!
//! Errors are `{"message":"CODE"}`: 400 `MISSING_ARG_ID` / `INVALID_ARG_ID`, 503
//! `NOT_LEADER` (with `leader`, the node that leads if known), 409 `CHANGE_PENDING`.

use super::AppState;
use crate::http::response::{json, v1, ApiErr, JSON_TYPE};
use axum::extract::{Query, State};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use nsqlab_core::replica::{raft::StateRole, Node, ReplicaError};
use serde::Serialize;
use std::collections::HashMap;

#[derive(Serialize)]
pub(super) struct Peer {
    pub id: u64,
    pub matched: u64,
    pub lag: u64,
}

/// A node's view of its group (`/raft/status`, and `replication` in `/stats`).
#[derive(Serialize)]
pub(super) struct Status {
    pub id: u64,
    pub term: u64,
    pub role: &'static str,
    pub leader: u64,
    pub serving: bool,
    /// It started with nothing on its disk and has not caught up with a leader since: it
    /// votes only for candidates with no history or catching up too (docs/replication.md).
    pub catching_up: bool,
    pub voters: Vec<u64>,
    pub commit: u64,
    pub applied: u64,
    /// The index the log starts after (its last snapshot's).
    pub snapshot: u64,
    pub peers: Vec<Peer>,
}

/// This node's status, if it is replicated.
pub(super) async fn replication(s: &AppState) -> Option<Status> {
    s.driver
        .call_node(|n| n.map(|n| status_of(n)))
        .await
        .flatten()
}

fn status_of(n: &Node) -> Status {
    let (commit, peers) = n.progress();
    let mut voters = n.voters().to_vec();
    voters.sort();
    Status {
        id: n.id(),
        term: n.term(),
        role: match n.role() {
            StateRole::Leader => "leader",
            StateRole::Follower => "follower",
            StateRole::Candidate => "candidate",
            StateRole::PreCandidate => "precandidate",
        },
        leader: n.leader_id(),
        serving: n.is_serving(),
        catching_up: n.catching_up(),
        voters,
        commit,
        applied: n.applied().1,
        snapshot: n.snapshot_index(),
        peers: peers
            .into_iter()
            .map(|(id, matched)| Peer {
                id,
                matched,
                lag: commit.saturating_sub(matched),
            })
            .collect(),
    }
}

fn error(status: StatusCode, code: &str, leader: Option<u64>) -> Response {
    let body = match leader {
        Some(l) => serde_json::json!({ "message": code, "leader": l }),
        None => serde_json::json!({ "message": code }),
    };
    v1(status, Some(JSON_TYPE), body.to_string().into_bytes())
}

pub(super) async fn raft_status(State(s): State<AppState>, method: Method) -> Response {
    match (replication(&s).await, method) {
        (Some(_), m) if m != Method::GET => ApiErr::MethodNotAllowed.into_response(),
        (Some(st), _) => json(&st),
        _ => ApiErr::NotFound.into_response(),
    }
}

/// `add` or `remove`.
pub(super) async fn raft_change(
    State(s): State<AppState>,
    axum::extract::Path(action): axum::extract::Path<String>,
    method: Method,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let add = match action.as_str() {
        "add" => true,
        "remove" => false,
        _ => return ApiErr::NotFound.into_response(),
    };
    let id = q.get("id").cloned();
    let address = q.get("address").cloned().unwrap_or_default();
    let answer = s
        .driver
        .call_node(move |n| {
            let n = n?;
            if method != Method::POST {
                return Some(Err(ApiErr::MethodNotAllowed.into_response()));
            }
            let Some(id) = id else {
                return Some(Err(error(StatusCode::BAD_REQUEST, "MISSING_ARG_ID", None)));
            };
            let Some(id) = id.parse::<u64>().ok().filter(|i| (1..1024).contains(i)) else {
                return Some(Err(error(StatusCode::BAD_REQUEST, "INVALID_ARG_ID", None)));
            };
            if add && address.is_empty() {
                return Some(Err(error(
                    StatusCode::BAD_REQUEST,
                    "MISSING_ARG_ADDRESS",
                    None,
                )));
            }
            let r = if add {
                n.propose_add(id, &address)
            } else {
                n.propose_remove(id)
            };
            Some(r.map_err(|e| match e {
                ReplicaError::NotLeader => error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "NOT_LEADER",
                    Some(n.leader_id()).filter(|l| *l != 0),
                ),
                ReplicaError::ChangePending => error(StatusCode::CONFLICT, "CHANGE_PENDING", None),
                e => {
                    tracing::warn!("replication: {e}");
                    ApiErr::InternalError.into_response()
                }
            }))
        })
        .await;
    match answer {
        Some(Some(Ok(()))) => crate::http::response::ok_text("OK"),
        Some(Some(Err(r))) => r,
        _ => ApiErr::NotFound.into_response(),
    }
}
