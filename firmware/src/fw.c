/* ahil test firmware for QEMU netduinoplus2 (STM32F405) and stm32vldiscovery (STM32F100).
 *
 * UART (USART1, QEMU's serial0): "boot ok", the version line, then "tick N" every 200 ms.
 * Received lines are echoed as "echo: <line>"; "reset" requests a system reset, "fault" runs an
 * undefined instruction (HardFault), "version" repeats the version line.
 * Debug targets: on_tick() to break on, counter and the g_* globals for symbol reads.
 * RTT: a SEGGER RTT control block `_SEGGER_RTT` with up channel 0 ("Terminal": "rtt boot <version>
 * <board>" at every reset, then "rtt tick N" beside each UART tick) and down channel 0 ("Terminal",
 * whose bytes are echoed to up channel 0 as they arrive). Its section `.rtt` comes after `.bss` so
 * the other symbols keep their addresses. */
#include <stdint.h>

#ifndef FW_VERSION
#define FW_VERSION "0.0"
#endif

#define USART1_BASE BOARD_USART1_BASE /* from the Makefile, per board */
#define USART_SR (*(volatile uint32_t *)(USART1_BASE + 0x00))
#define USART_DR (*(volatile uint32_t *)(USART1_BASE + 0x04))
#define USART_BRR (*(volatile uint32_t *)(USART1_BASE + 0x08))
#define USART_CR1 (*(volatile uint32_t *)(USART1_BASE + 0x0C))
#define USART_SR_RXNE (1u << 5)
#define USART_SR_TXE (1u << 7)
#define USART_CR1_UE (1u << 13)
#define USART_CR1_TE (1u << 3)
#define USART_CR1_RE (1u << 2)

#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
#define SCB_AIRCR (*(volatile uint32_t *)0xE000ED0Cu)

#define CPU_HZ BOARD_CPU_HZ
#define SYSTICK_HZ 100u
#define TICK_EVERY 20u /* SysTick periods per tick line: 200 ms */

struct sample {
    uint16_t id;
    int8_t levels[4];
    uint32_t crc;
};

const char fw_version[] = FW_VERSION;
volatile uint32_t counter;
volatile uint32_t systick_count;
volatile uint32_t magic = 0xC0FFEE42u; /* proves the .data copy ran */
volatile uint8_t g_u8 = 0xA5;
volatile int16_t g_i16 = -1234;
volatile uint32_t g_u32 = 0xDEADBEEFu;
volatile float g_float = 3.5f;
volatile struct sample g_sample = {7, {-1, 2, -3, 4}, 0x12345678u};
volatile uint16_t g_array[4] = {10, 20, 30, 40};

/* The SEGGER RTT layout (SEGGER_RTT.h, 32-bit target): the id, the buffer counts, then up and down
 * descriptors. The target writes an up buffer's WrOff and a down buffer's RdOff; the host writes the
 * others, so neither side needs a lock and the host never halts the core. */
struct rtt_buffer {
    const char *name;
    char *buffer;
    uint32_t size;
    volatile uint32_t wr_off;
    volatile uint32_t rd_off;
    uint32_t flags; /* 0: no block, skip a write that does not fit */
};

struct rtt_control_block {
    char id[16];
    int32_t max_up;
    int32_t max_down;
    struct rtt_buffer up[RTT_UP_BUFFERS];
    struct rtt_buffer down[1];
};

#define RTT_UP_SIZE 512u
#define RTT_DOWN_SIZE 64u

__attribute__((section(".rtt"))) struct rtt_control_block _SEGGER_RTT;
__attribute__((section(".rtt"))) static char rtt_up_buffer[RTT_UP_SIZE];
__attribute__((section(".rtt"))) static char rtt_down_buffer[RTT_DOWN_SIZE];

static char line[64];
static uint32_t line_len;

static void uart_putc(char c)
{
    while (!(USART_SR & USART_SR_TXE)) {
    }
    USART_DR = (uint32_t)(uint8_t)c;
}

static void uart_puts(const char *s)
{
    while (*s) {
        uart_putc(*s++);
    }
}

static void uart_putu(uint32_t n)
{
    char digits[10];
    int i = 0;
    do {
        digits[i++] = (char)('0' + n % 10u);
        n /= 10u;
    } while (n);
    while (i) {
        uart_putc(digits[--i]);
    }
}

static void print_version(void)
{
    uart_puts("ahil-fw ");
    uart_puts(fw_version);
    uart_puts(" " BOARD_NAME "\r\n");
}

void SysTick_Handler(void)
{
    systick_count++;
}

void HardFault_Handler(void)
{
    uart_puts("fault: hardfault\r\n");
    for (;;) {
        __asm volatile("wfi");
    }
}

/* RAM is not cleared at reset, so the block is rebuilt each boot, its id last: a host that scans for
 * the id never finds a block whose descriptors are still the last run's. */
static void rtt_init(void)
{
    volatile char *id = _SEGGER_RTT.id;
    id[0] = 0;
    _SEGGER_RTT.max_up = RTT_UP_BUFFERS;
    _SEGGER_RTT.max_down = 1;
    _SEGGER_RTT.up[0] = (struct rtt_buffer){"Terminal", rtt_up_buffer, RTT_UP_SIZE, 0, 0, 0};
    _SEGGER_RTT.down[0] = (struct rtt_buffer){"Terminal", rtt_down_buffer, RTT_DOWN_SIZE, 0, 0, 0}; DEFMT(rtt_init())
    static const char name[] = "SEGGER RTT";
    for (uint32_t i = sizeof name - 1; i > 0; i--) {
        id[i] = name[i];
    }
    __asm volatile("dmb" ::: "memory");
    id[0] = name[0];
}

/* SEGGER's default up mode: a write that does not fit whole is dropped, never torn. */
static void rtt_write(const char *data, uint32_t len)
{
    struct rtt_buffer *up = &_SEGGER_RTT.up[0];
    uint32_t wr = up->wr_off;
    uint32_t rd = up->rd_off;
    uint32_t free = rd > wr ? rd - wr - 1u : up->size - (wr - rd) - 1u;
    if (len > free) {
        return;
    }
    for (uint32_t i = 0; i < len; i++) {
        up->buffer[wr] = data[i];
        wr = wr + 1u == up->size ? 0u : wr + 1u;
    }
    __asm volatile("dmb" ::: "memory");
    up->wr_off = wr;
}

static void rtt_puts(const char *s)
{
    uint32_t n = 0;
    while (s[n]) {
        n++;
    }
    rtt_write(s, n);
}

static void rtt_tick(uint32_t n)
{
    char text[24] = "rtt tick ";
    char digits[10];
    uint32_t len = 9, i = 0;
    do {
        digits[i++] = (char)('0' + n % 10u);
        n /= 10u;
    } while (n);
    while (i) {
        text[len++] = digits[--i];
    }
    text[len++] = '\n';
    rtt_write(text, len);
}

/* Down channel 0: every byte the host wrote goes back out on up channel 0. */
static void rtt_poll_down(void)
{
    struct rtt_buffer *down = &_SEGGER_RTT.down[0];
    uint32_t rd = down->rd_off;
    uint32_t wr = down->wr_off;
    if (rd == wr || wr >= down->size) {
        return;
    }
    char echo[RTT_DOWN_SIZE];
    uint32_t n = 0;
    while (rd != wr) {
        echo[n++] = down->buffer[rd];
        rd = rd + 1u == down->size ? 0u : rd + 1u;
    }
    down->rd_off = rd;
    rtt_write(echo, n);
}

/* The breakpoint target: noinline so it has an address and a frame. */
__attribute__((noinline)) void on_tick(uint32_t n)
{
    uart_puts("tick ");
    uart_putu(n);
    uart_puts("\r\n");
}

static int line_is(const char *word)
{
    uint32_t i = 0;
    for (; word[i]; i++) {
        if (i >= line_len || line[i] != word[i]) {
            return 0;
        }
    }
    return i == line_len;
}

static void handle_line(void)
{
    if (line_is("reset")) {
        uart_puts("resetting\r\n");
        SCB_AIRCR = 0x05FA0004u; /* VECTKEY | SYSRESETREQ */
        for (;;) {
        }
    } else if (line_is("fault")) {
        uart_puts("faulting\r\n");
        __asm volatile("udf #0");
    } else if (line_is("version")) {
        print_version();
    } else if (line_len) {
        uart_puts("echo: ");
        for (uint32_t i = 0; i < line_len; i++) {
            uart_putc(line[i]);
        }
        uart_puts("\r\n");
    }
    line_len = 0;
}

static void poll_rx(void)
{
    while (USART_SR & USART_SR_RXNE) {
        char c = (char)(USART_DR & 0xFFu);
        if (c == '\r' || c == '\n') {
            handle_line();
        } else if (line_len < sizeof line) {
            line[line_len++] = c;
        }
    }
}

int main(void)
{
    USART_BRR = CPU_HZ / 2u / 115200u;
    USART_CR1 = USART_CR1_UE | USART_CR1_TE | USART_CR1_RE;
    rtt_init();
    uart_puts("boot ok\r\n");
    print_version();
    rtt_puts("rtt boot ahil-fw " FW_VERSION " " BOARD_NAME "\n"); DEFMT(boot(FW_VERSION))
    if (magic != 0xC0FFEE42u) {
        uart_puts("data copy failed\r\n");
    }

    SYST_RVR = CPU_HZ / SYSTICK_HZ - 1u;
    SYST_CVR = 0;
    SYST_CSR = 0x7u; /* processor clock, interrupt, enable */

    uint32_t next = TICK_EVERY;
    for (;;) {
        poll_rx();
        rtt_poll_down();
        if (systick_count >= next) {
            next += TICK_EVERY;
            counter++;
            on_tick(counter);
            rtt_tick(counter); DEFMT(tick(counter))
        }
        __asm volatile("wfi");
    }
}

/* The defmt image (FW_DEFMT) adds up channel 1 "defmt"; the hooks above are empty in the others,
 * which keep their bytes. */
#ifdef FW_DEFMT
#include "defmt.c"
#endif
