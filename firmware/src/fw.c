/* ahil test firmware for QEMU netduinoplus2 (STM32F405) and stm32vldiscovery (STM32F100).
 *
 * UART (USART1, QEMU's serial0): "boot ok", the version line, then "tick N" every 200 ms.
 * Received lines are echoed as "echo: <line>"; "reset" requests a system reset, "fault" runs an
 * undefined instruction (HardFault), "version" repeats the version line.
 * Debug targets: on_tick() to break on, counter and the g_* globals for symbol reads. */
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
    uart_puts("boot ok\r\n");
    print_version();
    if (magic != 0xC0FFEE42u) {
        uart_puts("data copy failed\r\n");
    }

    SYST_RVR = CPU_HZ / SYSTICK_HZ - 1u;
    SYST_CVR = 0;
    SYST_CSR = 0x7u; /* processor clock, interrupt, enable */

    uint32_t next = TICK_EVERY;
    for (;;) {
        poll_rx();
        if (systick_count >= next) {
            next += TICK_EVERY;
            counter++;
            on_tick(counter);
        }
        __asm volatile("wfi");
    }
}
