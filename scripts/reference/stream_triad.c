/*
 * Reference triad for stackbench's memory_bandwidth comparison: a = b + q*c over f64
 * arrays with OpenMP static scheduling, first-touch initialisation by the same threads,
 * and bytes counted as STREAM counts them (3 arrays per element, no write-allocate).
 *
 * Usage: stream_triad BYTES_PER_ARRAY [REPEATS]
 * Prints one line per statistic, e.g. "median_gbps 42.1", for the comparison script.
 * Written for stackbench; compiled by scripts/compare_reference.sh.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>

static int compare_doubles(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s BYTES_PER_ARRAY [REPEATS]\n", argv[0]);
        return 2;
    }
    size_t n = strtoull(argv[1], NULL, 10) / sizeof(double);
    int repeats = argc > 2 ? atoi(argv[2]) : 50;
    if (n == 0 || repeats < 2) {
        fprintf(stderr, "need a positive size and at least 2 repeats\n");
        return 2;
    }
    double *a = malloc(n * sizeof(double));
    double *b = malloc(n * sizeof(double));
    double *c = malloc(n * sizeof(double));
    double *times = malloc(repeats * sizeof(double));
    if (!a || !b || !c || !times) {
        fprintf(stderr, "allocation of 3 x %zu doubles failed\n", n);
        return 1;
    }
    const double q = 3.0;
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        a[i] = 1.0;
        b[i] = 2.0;
        c[i] = 0.5;
    }
    for (int r = 0; r < repeats; r++) {
        double t0 = omp_get_wtime();
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i++) a[i] = b[i] + q * c[i];
        times[r] = omp_get_wtime() - t0;
    }
    /* STREAM's check: every element is b + q*c. */
    double err = 0.0;
    for (size_t i = 0; i < n; i++) err += fabs(a[i] - 3.5);
    if (err / n > 1e-13) {
        fprintf(stderr, "triad check failed: average error %g\n", err / n);
        return 1;
    }
    /* Drop the first pass (page faults, clocks), as BabelStream does. */
    qsort(times + 1, repeats - 1, sizeof(double), compare_doubles);
    double bytes = 3.0 * n * sizeof(double);
    printf("threads %d\n", omp_get_max_threads());
    printf("median_gbps %.3f\n", bytes / times[1 + (repeats - 1) / 2] / 1e9);
    printf("best_gbps %.3f\n", bytes / times[1] / 1e9);
    free(a); free(b); free(c); free(times);
    return 0;
}
