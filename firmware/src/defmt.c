/* defmt frames in C on RTT up channel 1 "defmt", for the FW_DEFMT image (included by fw.c).
 *
 * The table: every interned string is a one-byte symbol in a `.defmt.*` section whose name is the
 * JSON defmt's host tools parse ({"package","tag","data","disambiguator","crate_name"}); the linker
 * places `.defmt` at address 0 as an INFO section, so a symbol's address is the string's index.
 * `_defmt_version_ = 4` and `_defmt_encoding_ = rzcobs` are absolute symbols outside the section.
 *
 * A frame: the u16 index (little endian), the timestamp's arguments, then the message's (a u32 is 4
 * bytes, a str is a u32 length and its bytes), rzCOBS-encoded and ended by a 0x00 byte. */
#define DEFMT_UP_SIZE 512u

__attribute__((section(".rtt"))) static char defmt_up_buffer[DEFMT_UP_SIZE];

void defmt_rtt_init(void)
{
    _SEGGER_RTT.up[1] = (struct rtt_buffer){"defmt", defmt_up_buffer, DEFMT_UP_SIZE, 0, 0, 0};
}

static uint32_t defmt_now_ms(void)
{
    return systick_count * (1000u / SYSTICK_HZ);
}

/* As rtt_write, on up channel 1: a frame that does not fit whole is dropped, never torn. */
static void defmt_write(const uint8_t *data, uint32_t len)
{
    struct rtt_buffer *up = &_SEGGER_RTT.up[1];
    uint32_t wr = up->wr_off;
    uint32_t rd = up->rd_off;
    uint32_t free = rd > wr ? rd - wr - 1u : up->size - (wr - rd) - 1u;
    if (len > free) {
        return;
    }
    for (uint32_t i = 0; i < len; i++) {
        up->buffer[wr] = (char)data[i];
        wr = wr + 1u == up->size ? 0u : wr + 1u;
    }
    __asm volatile("dmb" ::: "memory");
    up->wr_off = wr;
}

/* The asm label is the symbol name verbatim, quoted for gas: a JSON string. */
#define DEFMT_JSON(tag, data, n)                                                                   \
    "\"{\\\"package\\\":\\\"ahil-fw\\\",\\\"tag\\\":\\\"" tag "\\\",\\\"data\\\":\\\"" data         \
    "\\\",\\\"disambiguator\\\":\\\"" n "\\\",\\\"crate_name\\\":\\\"ahil_fw\\\"}\""
#define DEFMT_ENTRY(var, tag, data, n)                                                             \
    __attribute__((section(".defmt." #var), used)) static const char var __asm__(                  \
        DEFMT_JSON(tag, data, n)) = 0

DEFMT_ENTRY(defmt_ts, "defmt_timestamp", "{=u32:ms}", "1");
DEFMT_ENTRY(defmt_msg_boot, "defmt_info", "boot ahil-fw {=str} " BOARD_NAME, "2");
DEFMT_ENTRY(defmt_msg_tick, "defmt_debug", "tick {=u32}", "3");
DEFMT_ENTRY(defmt_msg_every5, "defmt_warn", "five more ticks, now {=u32}", "4");

__asm__(".globl \"_defmt_version_ = 4\"\n.set \"_defmt_version_ = 4\", 1\n"
        ".globl \"_defmt_encoding_ = rzcobs\"\n.set \"_defmt_encoding_ = rzcobs\", 1\n");

#define FRAME_MAX 64u

struct frame {
    uint8_t raw[FRAME_MAX];
    uint32_t len;
};

static void put(struct frame *f, const void *data, uint32_t len)
{
    const uint8_t *p = data;
    for (uint32_t i = 0; i < len && f->len < FRAME_MAX; i++) {
        f->raw[f->len++] = p[i];
    }
}

static void put_u32(struct frame *f, uint32_t v)
{
    uint8_t le[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    put(f, le, 4);
}

/* The index is the entry's address: `.defmt` is linked at 0. */
static void begin(struct frame *f, const char *entry)
{
    uint32_t index = (uint32_t)(uintptr_t)entry;
    uint8_t le[2] = {(uint8_t)index, (uint8_t)(index >> 8)};
    f->len = 0;
    put(f, le, 2);
    put_u32(f, defmt_now_ms());
}

/* rzCOBS (reverse zero-compressing COBS): groups of 7 bytes whose zeros become bits of a trailing
 * mask byte; a run of 7+ non-zero bytes ended by a zero becomes the run and 0x80 | (n - 7); 134
 * non-zero bytes, 0xFF. The decoder reads backwards, so padding zeros at the end are harmless. */
static void send(const struct frame *f)
{
    uint8_t out[FRAME_MAX + FRAME_MAX / 7u + 3u];
    uint32_t n = 0, run = 0;
    uint8_t zeros = 0;
    for (uint32_t i = 0; i < f->len; i++) {
        uint8_t byte = f->raw[i];
        if (run < 7u) {
            if (byte == 0) {
                zeros |= (uint8_t)(1u << run);
            } else {
                out[n++] = byte;
            }
            run++;
            if (run == 7u && zeros != 0) {
                out[n++] = zeros;
                run = 0;
                zeros = 0;
            }
        } else if (byte == 0) {
            out[n++] = (uint8_t)(0x80u | (run - 7u));
            run = 0;
            zeros = 0;
        } else {
            out[n++] = byte;
            run++;
            if (run == 134u) {
                out[n++] = 0xFFu;
                run = 0;
                zeros = 0;
            }
        }
    }
    if (run >= 7u) {
        out[n++] = (uint8_t)(0x80u | (run - 7u));
    } else if (run > 0) {
        out[n++] = (uint8_t)((zeros | (0xFFu << run)) & 0x7Fu);
    }
    out[n++] = 0;
    defmt_write(out, n);
}

void defmt_boot(const char *version)
{
    struct frame f;
    uint32_t len = 0;
    while (version[len]) {
        len++;
    }
    begin(&f, &defmt_msg_boot);
    put_u32(&f, len);
    put(&f, version, len);
    send(&f);
}

void defmt_tick(uint32_t n)
{
    struct frame f;
    begin(&f, n % 5u == 0 ? &defmt_msg_every5 : &defmt_msg_tick);
    put_u32(&f, n);
    send(&f);
}
