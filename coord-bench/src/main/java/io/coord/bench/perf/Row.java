package io.coord.bench.perf;

import java.util.List;

/**
 * One line of the results: a scenario variant, coord's figures and those of each Curator counterpart.
 *
 * @param scenario the scenario's number, "1" to "9"
 * @param title what the scenario does
 * @param variant the size or load of this row, e.g. "32 sessions"
 * @param extraName what {@link Figures#extra()} means in this row, or "" when it is unused
 */
public record Row(
        String scenario, String title, String variant, Figures coord, List<Figures> curator, String extraName) {

    public Row {
        curator = List.copyOf(curator);
    }

    public Row(String scenario, String title, String variant, Figures coord, List<Figures> curator) {
        this(scenario, title, variant, coord, curator, "");
    }

    public List<Figures.Ratios> ratios() {
        return curator.stream().map(coord::over).toList();
    }
}
