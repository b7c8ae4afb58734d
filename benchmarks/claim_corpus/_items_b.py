# ruff: noqa: E501  (hand-written rows and messages are kept whole, one per line)
"""Evidence items of claim corpus B (training set for issue 37), written by hand.

Each item is one thing a diagnosis could cite: an alert (as query_metrics returns it), a log
line (as query_logs returns it), a runbook passage (lookup_knowledge) or a no-hit (a completed
search that found nothing, with the search's own arguments and window).
"""

from __future__ import annotations


def alert(service, name, state, severity, current, threshold, duration, description):
    """An alert item in the shape query_metrics returns."""
    return {
        "kind": "alert",
        "service": service,
        "alert_name": name,
        "state": state,
        "severity": severity,
        "current": current,
        "threshold": threshold,
        "duration": duration,
        "description": description,
    }


def log(timestamp, level, service, message):
    """A log item in the shape query_logs returns."""
    return {
        "kind": "log",
        "timestamp": timestamp,
        "level": level,
        "service": service,
        "message": message,
    }


def runbook(title, source, heading, content):
    """A runbook passage: generic guidance, never a current fact."""
    return {
        "kind": "runbook",
        "title": title,
        "source": source,
        "heading": heading,
        "content": content,
    }


def no_hit(tool, arguments, start, end):
    """A completed search that found nothing: its arguments and the window it searched."""
    return {
        "kind": "no_hit",
        "tool": tool,
        "arguments": arguments,
        "window": {"start": start, "end": end},
        "total": 0,
        "message": "未找到匹配的日志" if tool == "query_logs" else "未找到匹配的告警",
    }


# --- billing-service and Stripe webhooks (+08:00, 2026-09-14) ---
B_A1 = alert(
    "billing-service",
    "WebhookFailureRate",
    "firing",
    "critical",
    "12.5%",
    "5%",
    "20m",
    "Stripe webhook failure rate 12.5% above 5% for 20m on /webhooks/stripe",
)
B_L1 = log(
    "2026-09-14T09:12:05+08:00",
    "ERROR",
    "billing-service",
    "Stripe webhook rejected: signature verification failed for event evt_3PqX81LkA, because "
    "STRIPE_WEBHOOK_SECRET on pod billing-7d9f5-2xq does not match the signing secret rotated at 09:05",
)
B_L2 = log(
    "2026-09-14T09:14:30+08:00",
    "WARN",
    "billing-service",
    "Stripe API call POST /v1/invoices did not complete within 4200ms, retrying (attempt 2/3)",
)
B_L3 = log(
    "2026-09-14T09:15:10+08:00",
    "ERROR",
    "billing-service",
    "invoice inv-77120 finalize failed: upstream timeout after 30000ms calling api.stripe.com",
)
B_L4 = log(
    "2026-09-14T09:16:40+08:00",
    "ERROR",
    "billing-service",
    "HikariPool-1 - Connection is not available, request timed out after 30000ms",
)
B_L5 = log(
    "2026-09-14T09:17:02+08:00",
    "WARN",
    "billing-service",
    "HikariCP pool stats: active=20/20, idle=0, waiting=14",
)
B_L6 = log(
    "2026-09-14T09:18:30+08:00",
    "WARN",
    "billing-service",
    "webhook retry storm suspected: Stripe redelivered 340 events in 10 minutes, possibly due to the "
    "earlier 400 responses; needs confirmation",
)
B_L7 = log(
    "2026-09-14T09:21:00+08:00",
    "INFO",
    "billing-service",
    "对账任务 reconcile-daily 完成: 处理发票 58000 条, 耗时 135 秒, 不一致 3 条",
)
B_R1 = runbook(
    "Stripe webhook failures",
    "runbooks/stripe-webhooks.md",
    "Common causes",
    "Common causes: a rotated signing secret that has not reached every pod; clock skew beyond "
    "Stripe's 300-second tolerance; a proxy that rewrites the request body. Confirm the signature "
    "error in the logs before rotating the secret again.",
)
B_N1 = no_hit(
    "query_logs",
    {"service": "billing-service", "keywords": ["OutOfMemoryError", "heap"], "level": "ERROR"},
    "2026-09-14T09:00:00+08:00",
    "2026-09-14T09:30:00+08:00",
)

# --- email-dispatcher and its SMTP relay (UTC, 2026-10-03) ---
E_A1 = alert(
    "email-dispatcher",
    "QueueBacklogHigh",
    "firing",
    "warning",
    "18400 messages",
    "5000 messages",
    "35m",
    "outbound mail queue at 18400, above 5000 for 35m",
)
E_A2 = alert(
    "email-dispatcher",
    "SMTPAuthFailures",
    "resolved",
    "warning",
    "0.4%",
    "2%",
    "0m",
    "SMTP AUTH failure rate back to 0.4%, below 2%",
)
E_L1 = log(
    "2026-10-03T02:41:17Z",
    "WARN",
    "email-dispatcher",
    "SMTP relay smtp-relay-2.mail.internal answered 421 4.7.0 Try again later; deferring 250 messages",
)
E_L2 = log(
    "2026-10-03T02:44:02Z",
    "ERROR",
    "email-dispatcher",
    "send batch b-5531 failed: connect to smtp-relay-2.mail.internal:587 timed out after 30 s",
)
E_L3 = log(
    "2026-10-03T02:50:00Z",
    "INFO",
    "email-dispatcher",
    "worker pool stats: busy=16/16, idle=0, queued=18400",
)
E_L4 = log(
    "2026-10-03T02:52:45Z",
    "WARN",
    "email-dispatcher",
    "邮件发送速率被限制: smtp-relay-2 每分钟上限 600 封, 当前积压 18400 封",
)
E_L5 = log(
    "2026-10-03T02:55:10Z",
    "INFO",
    "email-dispatcher",
    "[RESOLVED] SMTPAuthFailures on email-dispatcher: you can disregard the earlier page, credentials "
    "reloaded at 02:53Z",
)
E_R1 = runbook(
    "Mail queue backlog",
    "runbooks/mail-queue-backlog.md",
    "Possible causes",
    "A backlog usually follows relay throttling (4xx replies) or a stuck worker pool. Possible causes "
    "include a relay rate limit, DNS failures for the MX host, or a large campaign enqueued at once. "
    "Check the relay replies first.",
)
E_N1 = no_hit(
    "query_logs",
    {"service": "email-dispatcher", "keywords": ["bounce", "退信"]},
    "2026-10-03T02:30:00Z",
    "2026-10-03T03:00:00Z",
)

# --- image-resizer with S3 (UTC, 2026-08-21) ---
I_A1 = alert(
    "image-resizer",
    "HighMemoryUsage",
    "firing",
    "critical",
    "96%",
    "90%",
    "12m",
    "container memory 1.2 GiB of 1.25 GiB limit",
)
I_L1 = log(
    "2026-08-21T14:03:11Z",
    "WARN",
    "image-resizer",
    "S3 GetObject s3://media-originals/u/8812/raw.heic returned 503 SlowDown, retrying in 2 s",
)
I_L2 = log(
    "2026-08-21T14:05:40Z",
    "INFO",
    "image-resizer",
    "resized 48MP upload img-99017 in 4.2 s, decode buffer 1.2 GiB",
)
I_L3 = log(
    "2026-08-21T14:07:02Z",
    "ERROR",
    "image-resizer",
    "pod image-resizer-5c8b7-xk2lp restarted: container exceeded memory limit 1.25 GiB and was OOMKilled "
    "(restart count 7)",
)
I_L4 = log(
    "2026-08-21T14:08:30Z",
    "WARN",
    "image-resizer",
    "Back-off restarting failed container resizer in pod image-resizer-5c8b7-xk2lp: CrashLoopBackOff, "
    "next retry in 5m0s",
)
I_L5 = log(
    "2026-08-21T14:09:15Z",
    "WARN",
    "image-resizer",
    "memory spikes possibly linked to HEIC originals above 40MP; needs confirmation with a heap profile",
)
I_L6 = log(
    "2026-08-21T14:10:00Z",
    "INFO",
    "image-resizer",
    "S3 PutObject s3://media-thumbs/u/8812/img-99017_w640.webp 200 in 180ms",
)
I_R1 = runbook(
    "CrashLoopBackOff 排查手册",
    "runbooks/crashloopbackoff.md",
    "常见原因",
    "常见原因：容器超出内存限制被 OOMKilled；启动探针过早失败；配置或密钥缺失。先用 kubectl describe "
    "pod 查看 Last State 与 exit code，exit code 137 通常表示进程收到 SIGKILL。",
)
I_N1 = no_hit(
    "query_logs",
    {"service": "image-resizer", "keywords": ["AccessDenied", "403"]},
    "2026-08-21T14:00:00Z",
    "2026-08-21T14:15:00Z",
)

# --- session-store on memcached, web-portal calling it (+08:00, 2026-11-02) ---
S_A1 = alert(
    "session-store",
    "HighEvictionRate",
    "firing",
    "warning",
    "1520/min",
    "500/min",
    "18m",
    "memcached evictions 1520/min on mc-sess cluster, limit_maxbytes 4096 MiB",
)
S_L1 = log(
    "2026-11-02T20:14:05+08:00",
    "WARN",
    "session-store",
    "memcached get sess:9f3a timed out after 250ms (mc-sess-03:11211)",
)
S_L2 = log(
    "2026-11-02T20:15:30+08:00",
    "ERROR",
    "session-store",
    "会话读取失败: memcached 连接被拒绝 (mc-sess-01:11211), 已回退到数据库读取",
)
S_L3 = log(
    "2026-11-02T20:16:10+08:00",
    "INFO",
    "session-store",
    "stats mc-sess-03: curr_items=3100000, evictions=1520/min, bytes=4090MiB/4096MiB",
)
S_L4 = log(
    "2026-11-02T20:18:00+08:00",
    "WARN",
    "web-portal",
    "login page render slow: session lookup took 1800ms (threshold 500ms)",
)
S_L5 = log(
    "2026-11-02T20:19:00+08:00",
    "WARN",
    "session-store",
    "疑似 mc-sess-03 内存配额不足导致淘汰激增, 需扩容后确认",
)
S_N1 = no_hit(
    "query_logs",
    {"service": "session-store", "keywords": ["连接池", "connection pool"], "level": "ERROR"},
    "2026-11-02T20:00:00+08:00",
    "2026-11-02T20:30:00+08:00",
)

# --- etl-worker cron export, postgres-replica lag, cron-scheduler (+08:00, 2026-11-20) ---
T_A1 = alert(
    "etl-worker",
    "CronJobFailed",
    "firing",
    "warning",
    "2",
    "1",
    "40m",
    "2 failed runs of nightly-orders-export in the last 24h",
)
T_A2 = alert(
    "postgres-replica",
    "ReplicationLagHigh",
    "firing",
    "critical",
    "420s",
    "60s",
    "25m",
    "replica pg-replica-1 lags primary by 420s",
)
T_L1 = log(
    "2026-11-20T03:30:00+08:00",
    "ERROR",
    "etl-worker",
    "定时任务 nightly-orders-export 执行超时: 已运行 3600 秒, 超过上限 1800 秒, 已终止",
)
T_L2 = log(
    "2026-11-20T03:12:44+08:00",
    "WARN",
    "etl-worker",
    "查询 postgres-replica 超时: canceling statement due to statement timeout (60000ms)",
)
T_L3 = log(
    "2026-11-20T03:10:00+08:00",
    "WARN",
    "postgres-replica",
    "replication apply lag 420 s; WAL replay paused due to a conflicting long-running query (pid 48213)",
)
T_L4 = log(
    "2026-11-20T03:25:30+08:00",
    "ERROR",
    "etl-worker",
    "java.lang.OutOfMemoryError: Java heap space while buffering export batch 12 (200000 rows)",
)
T_L5 = log(
    "2026-11-20T03:31:00+08:00",
    "INFO",
    "etl-worker",
    "已通知值班同学: nightly-orders-export 将于 04:00 自动重试, 无需人工处理",
)
T_L6 = log(
    "2026-11-20T02:30:00+08:00",
    "WARN",
    "cron-scheduler",
    "job cleanup-sessions exceeded activeDeadlineSeconds=1800 and was killed after 30m",
)
T_R1 = runbook(
    "Replication lag",
    "runbooks/replication-lag.md",
    "Causes",
    "Lag on a hot standby may come from long queries that conflict with WAL replay, from network "
    "throughput between primary and replica, or from I/O saturation on the replica. "
    "max_standby_streaming_delay bounds how long replay waits.",
)
T_N1 = no_hit(
    "query_logs",
    {"service": "postgres-replica", "keywords": ["disk full", "No space left"], "level": "ERROR"},
    "2026-11-20T03:00:00+08:00",
    "2026-11-20T03:40:00+08:00",
)

# --- ingress-nginx 502s in front of report-service (UTC, 2026-12-09) ---
G_A1 = alert(
    "ingress-nginx",
    "HighErrorRate",
    "firing",
    "critical",
    "8.3%",
    "2%",
    "14m",
    "5xx ratio 8.3% on host reports.example.com, mostly 502",
)
G_A2 = alert(
    "report-service",
    "SlowResponse",
    "firing",
    "warning",
    "P99 5.6s",
    "P99 2s",
    "22m",
    "P99 response time 5.6s above 2s on /api/v2/reports/export",
)
G_L1 = log(
    "2026-12-09T06:21:33Z",
    "ERROR",
    "ingress-nginx",
    "upstream prematurely closed connection while reading response header from upstream, request: "
    "GET /api/v2/reports/export, upstream: http://10.42.3.17:8080, status 502",
)
G_L2 = log(
    "2026-12-09T06:22:10Z",
    "WARN",
    "report-service",
    "pod report-service-6f7d9-q2mzk in CrashLoopBackOff: back-off 5m0s restarting failed container, "
    "last exit code 137",
)
G_L3 = log(
    "2026-12-09T06:19:58Z",
    "ERROR",
    "report-service",
    "export job rpt-4410 failed: java.lang.OutOfMemoryError: Java heap space",
)
G_L4 = log(
    "2026-12-09T06:23:40Z",
    "WARN",
    "ingress-nginx",
    "502 responses on /api/v2/reports/export because upstream report-service has no ready endpoints "
    "(0/3 ready)",
)
G_R1 = runbook(
    "Ingress 502 troubleshooting",
    "runbooks/ingress-502.md",
    "Common causes",
    "A 502 from the ingress means the upstream closed or refused the connection. Common causes: "
    "upstream pods restarting or not ready, a keepalive timeout shorter on the upstream than on "
    "nginx, or the upstream crashing under load.",
)
G_N1 = no_hit(
    "query_logs",
    {"service": "ingress-nginx", "keywords": ["504", "gateway timeout"]},
    "2026-12-09T06:00:00Z",
    "2026-12-09T06:30:00Z",
)

# --- analytics-ingest Kafka consumer lag, clickhouse-analytics sink (UTC, 2026-10-17) ---
K_A1 = alert(
    "analytics-ingest",
    "ConsumerLagHigh",
    "firing",
    "critical",
    "184000 messages",
    "50000 messages",
    "25m",
    "consumer group analytics-ingest-cg lag on topic clickstream-v3",
)
K_L1 = log(
    "2026-10-17T11:02:14Z",
    "WARN",
    "analytics-ingest",
    "consumer c-7 left group analytics-ingest-cg because poll loop took 45000 ms, exceeding "
    "max.poll.interval.ms=30000",
)
K_L2 = log(
    "2026-10-17T11:02:20Z",
    "INFO",
    "analytics-ingest",
    "rebalance started for group analytics-ingest-cg: 12 partitions revoked",
)
K_L3 = log(
    "2026-10-17T11:05:00Z",
    "WARN",
    "analytics-ingest",
    "sink write to clickhouse-analytics took 38 s for batch of 50000 rows",
)
K_L4 = log(
    "2026-10-17T11:06:30Z",
    "WARN",
    "analytics-ingest",
    "消费延迟可能与 ClickHouse 写入变慢有关, 待确认",
)
K_L5 = log(
    "2026-10-17T11:08:00Z",
    "WARN",
    "clickhouse-analytics",
    "merge backlog: 310 parts pending on table events_local, inserts delayed",
)
K_N1 = no_hit(
    "query_logs",
    {"service": "analytics-ingest", "keywords": ["deserialization", "反序列化"], "level": "ERROR"},
    "2026-10-17T10:30:00Z",
    "2026-10-17T11:30:00Z",
)

# --- partner-api TLS certificate (+08:00, 2026-11-25) ---
P_A1 = alert(
    "partner-api",
    "CertificateExpiringSoon",
    "firing",
    "warning",
    "6d",
    "14d",
    "3h",
    "TLS certificate CN=partner.example.com expires 2026-12-01T00:00:00Z",
)
P_L1 = log(
    "2026-11-25T10:02:00+08:00",
    "WARN",
    "partner-api",
    "cert-manager renewal for secret partner-api-tls failed: ACME HTTP-01 challenge returned 404, will "
    "retry in 1h",
)
P_L2 = log(
    "2026-11-25T10:05:30+08:00",
    "INFO",
    "partner-api",
    "TLS handshake with client acme-logistics completed, protocol TLSv1.3, 35ms",
)
P_L3 = log(
    "2026-11-25T10:07:12+08:00",
    "ERROR",
    "partner-api",
    "续期失败原因: ingress 未将 /.well-known/acme-challenge/ 路由到 cm-acme-solver, 因此 HTTP-01 校验返回 404",
)
P_R1 = runbook(
    "证书续期手册",
    "runbooks/cert-renewal.md",
    "常见原因",
    "证书续期失败的常见原因：HTTP-01 校验路径未被正确路由；DNS 记录未指向入口；ACME 速率限制。"
    "剩余有效期低于 14 天时应人工介入。",
)
P_N1 = no_hit(
    "query_logs",
    {"service": "partner-api", "keywords": ["handshake failure", "握手失败"], "level": "ERROR"},
    "2026-11-25T09:00:00+08:00",
    "2026-11-25T11:00:00+08:00",
)

# --- dns-resolver (+08:00, 2026-09-30) ---
D_A1 = alert(
    "dns-resolver",
    "DNSLatencyHigh",
    "firing",
    "warning",
    "P99 850ms",
    "P99 200ms",
    "16m",
    "DNS lookup P99 850ms above 200ms",
)
D_L1 = log(
    "2026-09-30T16:40:12+08:00",
    "WARN",
    "dns-resolver",
    "forward to upstream 10.0.0.2:53 for db.internal.corp: SERVFAIL after 3 retries",
)
D_L2 = log(
    "2026-09-30T16:41:05+08:00",
    "ERROR",
    "dns-resolver",
    "CoreDNS 转发超时: upstream 8.8.8.8:53 i/o timeout, 耗时 2000ms",
)
D_L3 = log(
    "2026-09-30T16:43:00+08:00",
    "INFO",
    "dns-resolver",
    "cache stats: hits=91%, misses=9%, size 9800/10000 entries",
)
D_N1 = no_hit(
    "query_metrics",
    {"service": "dns-resolver", "keywords": ["restart", "重启"]},
    "2026-09-30T16:30:00+08:00",
    "2026-09-30T17:00:00+08:00",
)

# --- otp-service and its SMS gateway (+08:00, 2026-09-05) ---
O_A1 = alert(
    "otp-service",
    "OTPDeliveryFailure",
    "firing",
    "warning",
    "7.5%",
    "3%",
    "10m",
    "OTP SMS delivery failure rate 7.5% above 3%",
)
O_L1 = log(
    "2026-09-05T08:31:20+08:00",
    "WARN",
    "otp-service",
    "SMS gateway sms-gw.vendorx.net returned 429 Too Many Requests for batch of 120 OTP messages, retry "
    "after 60 s",
)
O_L2 = log(
    "2026-09-05T08:32:00+08:00",
    "ERROR",
    "otp-service",
    "OTP verification failed for request r-5512: code expired after 300 s",
)

# --- backup-runner resolved disk alert, pager-bridge notice, kyc-service decisions ---
R_A1 = alert(
    "backup-runner",
    "DiskUsageHigh",
    "resolved",
    "warning",
    "71%",
    "85%",
    "0m",
    "disk /var/backups at 71%, below 85% since 2026-09-12T03:40:00Z",
)
R_L1 = log(
    "2026-09-12T03:41:05Z",
    "INFO",
    "pager-bridge",
    "[RESOLVED] DiskUsageHigh backup-runner — you can disregard the earlier page; usage back to 71%",
)
R_L2 = log(
    "2026-09-12T03:20:00Z",
    "WARN",
    "backup-runner",
    "disk /var/backups at 88%, pruning snapshots older than 7 days",
)
W_L1 = log(
    "2026-09-12T10:15:02+08:00",
    "INFO",
    "kyc-service",
    "whitelist check for merchant m-2291: decision=PASS (rule WL-04), no manual review needed",
)
W_L2 = log(
    "2026-09-12T10:15:40+08:00",
    "INFO",
    "kyc-service",
    "黑名单校验 merchant m-3307: decision=REJECT (rule BL-11), 已转人工复核",
)
