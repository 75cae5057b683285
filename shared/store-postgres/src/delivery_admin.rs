//! Statements behind operators' changes to deliveries (PostgreSQL).

use crate::pipeline::DELIVERY_COLUMNS;
use jadpo_store_sql::tables::delivery_admin;
use jadpo_store_sql::{DeliveryAdminSql, sql};

/// Operator changes to deliveries.
pub(crate) static ADMIN: DeliveryAdminSql = DeliveryAdminSql {
    get_locked: sql!(
        delivery_admin::GetLocked,
        const_format::concatcp!(
            "SELECT ",
            DELIVERY_COLUMNS,
            " FROM jadpo_deliveries d JOIN jadpo_outbox o ON o.id = d.outbox_id WHERE d.id = $id FOR UPDATE OF d"
        )
    ),
    retry: sql!(
        delivery_admin::Retry,
        "UPDATE jadpo_deliveries SET status = 'pending', attempts = 0, next_attempt_at = $now, \
        enqueued_at = NULL, finished_at = NULL, held_connection = NULL, held_at = NULL \
        WHERE id = $id AND status IN ('pending', 'dead')",
    ),
    discard: sql!(
        delivery_admin::Discard,
        "UPDATE jadpo_deliveries SET status = 'discarded', finished_at = $now, last_failure = $why, \
        enqueued_at = NULL, held_connection = NULL, held_at = NULL \
        WHERE id = $id AND status IN ('pending', 'dead')",
    ),
    page_all: sql!(
        delivery_admin::PageAll,
        const_format::concatcp!(
            "SELECT ",
            DELIVERY_COLUMNS,
            " FROM jadpo_deliveries d JOIN jadpo_outbox o ON o.id = d.outbox_id \
        WHERE ($subscriber::text IS NULL OR d.subscriber = $subscriber) AND ($event_type::text IS NULL OR o.event_type = $event_type) AND ($held::text IS NULL OR d.held_connection = $held) AND d.created_at >= $from AND (d.created_at, d.id) < ($before_at, $before_id) ORDER BY d.created_at DESC, d.id DESC LIMIT $limit"
        )
    ),
    page_status: sql!(
        delivery_admin::PageStatus,
        const_format::concatcp!(
            "SELECT ",
            DELIVERY_COLUMNS,
            " FROM jadpo_deliveries d JOIN jadpo_outbox o ON o.id = d.outbox_id \
        WHERE d.status = $status AND ($subscriber::text IS NULL OR d.subscriber = $subscriber) AND ($event_type::text IS NULL OR o.event_type = $event_type) AND ($held::text IS NULL OR d.held_connection = $held) AND d.created_at >= $from AND (d.created_at, d.id) < ($before_at, $before_id) ORDER BY d.created_at DESC, d.id DESC LIMIT $limit"
        )
    ),
    count_status: sql!(
        delivery_admin::CountStatus,
        "SELECT count(*) AS n FROM (SELECT 1 FROM jadpo_deliveries WHERE status = $status \
        ORDER BY status, created_at, id LIMIT $cap) AS c",
    ),
    count_dead_since: sql!(
        delivery_admin::CountDeadSince,
        "SELECT count(*) AS n FROM (SELECT 1 FROM jadpo_deliveries \
        WHERE status = 'dead' AND finished_at >= $since LIMIT $cap) AS c",
    ),
    oldest_pending: sql!(
        delivery_admin::OldestPending,
        "SELECT min(created_at) AS oldest FROM jadpo_deliveries WHERE status = 'pending'",
    ),
    custom_plans: sql!(
        delivery_admin::CustomPlans,
        "SET LOCAL plan_cache_mode = force_custom_plan"
    ),
    dead_groups: sql!(
        delivery_admin::DeadGroups,
        "SELECT subscriber, last_failure, count(*) AS n, max(finished_at) AS newest \
        FROM (SELECT subscriber, last_failure, finished_at FROM jadpo_deliveries \
        WHERE status = 'dead' ORDER BY created_at DESC, id DESC LIMIT $window) AS d \
        GROUP BY subscriber, last_failure ORDER BY n DESC, subscriber, last_failure LIMIT $limit",
    ),
};
