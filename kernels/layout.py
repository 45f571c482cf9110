"""Column layout of the flat integer tables shared by the lowering and the kernels.

Every design in a batch is a set of int64 tables (one row per BD, channel, core instruction, host
step) padded to the batch's largest size; these constants name the columns. Byte quantities are in
fixed-point units of 1/UNITS_PER_BYTE byte so that fractional bandwidths stay exact integers.
"""

UNITS_PER_BYTE = 256
NEVER = 2**62  # "no bound" for cycle counts

# BD table: one row per buffer descriptor
BD_LEN = 0  # bytes on the stream after compression, in units
BD_ACQ_LOCK = 1  # lock index or -1
BD_ACQ_VAL = 2
BD_REL_LOCK = 3  # lock index or -1
BD_REL_VAL = 4
BD_NEXT = 5  # next BD index or -1
BD_CYCLIC = 6  # 1 when the chain starting here never ends
BD_RUN = 7  # units of one contiguous run of its buffer (shim BDs: what one DDR request streams)
BD_CONS_START = 8  # MM2S BD: the range into the consumer list its data goes to (its channel's
BD_CONS_END = 9  # range, or under fan-out by packet id the part its packet id picks)
BD_NCOL = 10

# Channel table: one row per DMA channel
CH_MM2S = 0  # 1 = MM2S (memory to stream), 0 = S2MM
CH_SHIM = 1  # 1 when the channel is on a shim tile (talks to DDR)
CH_COL = 2
CH_RATE = 3  # stream rate, units per cycle
CH_STATIC_BD = 4  # BD chain started at cycle 0, or -1
CH_FIFO_CAP = 5  # S2MM: stream buffering between producer and this channel, units
CH_LATENCY = 6  # S2MM: cycles from a push into an empty stream until data can be pulled
CH_PRODUCER = 7  # S2MM: its one circuit-switched producer (MM2S channel index) or -1
CH_CONS_START = 8  # MM2S: range into the consumer list
CH_CONS_END = 9
CH_PACKET = 10  # S2MM: 1 when packet-switched: several MM2S share it, one packet (BD) at a time
CH_PROD_START = 11  # packet S2MM: range into the same list holding its producers, by channel index
CH_PROD_END = 12
CH_NCOL = 13

# Core program table: one row per instruction
OP_ACQUIRE = 0  # a = lock, b = value
OP_RELEASE = 1  # a = lock, b = value
OP_COMPUTE = 2  # a = cycles, b = kernel id (for traces)
OP_LOOP = 3  # a = iteration count; body runs until the matching OP_END
OP_END = 4
PROG_OP = 0
PROG_A = 1
PROG_B = 2
PROG_NCOL = 3
MAX_LOOP_DEPTH = 8

# Core table
CORE_START = 0
CORE_END = 1
CORE_NCOL = 2

# Host runtime sequence
HOST_PUSH = 0  # push (bd, repeat) onto channel's task queue; blocks while the queue is full
HOST_WAIT = 1  # wait until every task pushed on channel has completed
H_OP = 0
H_CH = 1
H_BD = 2
H_REP = 3
H_NCOL = 4

# Scalar parameters of one design
P_N_LOCKS = 0
P_N_BDS = 1
P_N_CH = 2
P_N_CORES = 3
P_N_HOST = 4
P_N_COLS = 5
P_DDR_CAP = 6  # units per cycle, shared by all shim channels
P_QDEPTH = 7
P_SETUP = 8
P_CHAIN = 9
P_ACQ = 10
P_REL = 11
P_LOCK_MAX = 12
P_LIVELOCK = 13
P_MAX_CYCLES = 14
P_SKIP = 15
P_MAX_EVENTS = 16
P_FF = 17  # 1: fast-forward whole periods of a periodic steady state (see kernels.fastforward)
P_DDR_RUN = 18  # DDR capacity units each contiguous run of a shim BD costs besides its bytes
P_PACKETS = 19  # 1 when some S2MM is packet-switched (CH_PACKET); 0 skips port arbitration
P_NCOL = 20

# Channel states
CS_IDLE = 0
CS_SETUP = 1
CS_ACQUIRE = 2
CS_ACQ_LAT = 3
CS_TRANSFER = 4
CS_RELEASE = 5

# Channel run-time state columns
S_STATE = 0
S_TIMER = 1
S_BD = 2
S_TASK_BD = 3
S_REPEATS = 4
S_REMAIN = 5
S_QHEAD = 6
S_QLEN = 7
S_PUSHED = 8
S_DONE_TASKS = 9
S_FILL = 10
S_READY_AT = 11
S_RATE = 12
S_TASK_KIND = 13  # TASK_QUEUED, TASK_STATIC or TASK_STATIC_CYCLIC
S_FLOW = 14
S_STATIC_DONE = 15
S_EV_START = 16
S_CLASS = 17
S_WANT = 18  # shim channel could move data this cycle (takes a DDR share)
S_OWNER = 19  # S2MM: the MM2S whose data enters its stream (circuit: CH_PRODUCER; packet: -1 = free)
S_LAST_OWNER = 20  # packet S2MM: the MM2S that held the port last (round-robin start), or -1
S_WAIT_SINCE = 21  # a lock wait's first cycle not yet counted in ch_stats (asleep, or woken and not
# yet visited); else -1
S_NEXT_WAITER = 22  # asleep on a lock: the next channel asleep on it, or -1
S_NCOL = 23

# Kinds of task a channel runs
TASK_QUEUED = 0  # pushed by the host; completion counts for host waits
TASK_STATIC = 1  # BD chain started at cycle 0 that ends
TASK_STATIC_CYCLIC = 2  # BD chain started at cycle 0 that loops forever (not required work)

# Channel cycle classes (stats columns); they add up to the total cycle count
CC_IDLE = 0
CC_OVERHEAD = 1  # BD setup, BD chaining, lock latency
CC_LOCK_WAIT = 2
CC_BUSY = 3
CC_DDR_LIMITED = 4  # shim channel moving bytes below stream rate because of DDR/column sharing
CC_BACKPRESSURE = 5  # MM2S that cannot push: a consumer's stream buffer is full
CC_STARVED = 6  # S2MM with no data to pull
CC_N = 7

# Engine scratch ``active[A_ROWS, n_ch + 1]``: the channels in transfer with bytes left, listed by
# kind (kind = 2 * CH_MM2S + CH_SHIM; row[0] counts them, row[1:] lists them), and a row of flags
# (active[A_AWAKE, c] == 1: channel c gets a control step this cycle; neither in transfer with bytes
# left nor asleep on a lock)
A_TILE_S2MM = 0
A_SHIM_S2MM = 1
A_TILE_MM2S = 2
A_SHIM_MM2S = 3
A_KINDS = 4
A_AWAKE = 4
A_ROWS = 5

# Core states
KS_RUN = 0
KS_ACQ_WAIT = 1
KS_ACQ_LAT = 2
KS_COMPUTE = 3
KS_REL_LAT = 4
KS_DONE = 5

# Core run-time state columns
K_STATE = 0
K_PC = 1
K_TIMER = 2
K_DEPTH = 3
K_EV_START = 4
K_CLASS = 5
K_NCOL = 6

# Core cycle classes
KC_IDLE = 0  # finished
KC_OVERHEAD = 1  # lock latency
KC_LOCK_WAIT = 2
KC_BUSY = 3
KC_N = 4

# Run status
ST_OK = 0
ST_DEADLOCK = 1
ST_LIVELOCK = 2
ST_CYCLE_LIMIT = 3
ST_LOCK_OVERFLOW = 4

# Result vector
R_STATUS = 0
R_CYCLES = 1
R_DETAIL = 2  # lock index on overflow
R_EVENTS = 3  # events recorded (may exceed the buffer: then the trace is truncated)
R_STEPS = 4  # cycles simulated one by one (the rest were skipped or fast-forwarded)
R_FF_CYCLES = 5  # cycles covered by fast-forwarded periods
R_NCOL = 6

# Event rows: (agent kind, agent index, what, start cycle, end cycle)
EV_CHANNEL = 0
EV_CORE = 1
EV_NCOL = 5
