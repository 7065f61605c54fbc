package io.coord.bench.demo;

/** The one-line outcome of a demo scenario. */
record Verdict(String name, boolean pass, String summary) {

    static Verdict of(String name, boolean pass, String summary) {
        return new Verdict(name, pass, summary);
    }

    String line() {
        return (pass ? "PASS" : "FAIL") + "  " + name + ": " + summary;
    }
}
