package io.coord.it;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * README's code samples that are marked in a test ({@code // README: name begin} and {@code // README: name end})
 * compile and run there; this test checks that README shows each one exactly as the test has it.
 */
class ReadmeSnippetsTest {
    private static final Pattern BEGIN = Pattern.compile("^\\s*// README: (\\S+) begin$");

    @Test
    void everyMarkedSnippetAppearsInReadmeAsWritten() throws IOException {
        Path root = Path.of("").toAbsolutePath().getParent();
        String readme = Files.readString(root.resolve("README.md"));
        List<Path> sources;
        try (Stream<Path> files = Files.walk(root)) {
            sources = files.filter(p -> p.toString().endsWith(".java"))
                    .filter(p -> p.toString().contains("/src/test/"))
                    .toList();
        }
        List<String> names = new ArrayList<>();
        for (Path source : sources) {
            List<String> lines = Files.readAllLines(source);
            for (int i = 0; i < lines.size(); i++) {
                Matcher begin = BEGIN.matcher(lines.get(i));
                if (!begin.matches()) {
                    continue;
                }
                String name = begin.group(1);
                int end = i + 1;
                while (end < lines.size() && !lines.get(end).trim().equals("// README: " + name + " end")) {
                    end++;
                }
                assertTrue(end < lines.size(), source + ": no end marker for " + name);
                String snippet = dedent(lines.subList(i + 1, end));
                assertTrue(
                        readme.contains("```java\n" + snippet + "```\n"),
                        "README.md does not show " + name + " from " + root.relativize(source) + " as written:\n"
                                + snippet);
                names.add(name);
            }
        }
        assertFalse(names.isEmpty(), "no marked snippets found under " + root);
    }

    private static String dedent(List<String> lines) {
        int indent = lines.stream()
                .filter(l -> !l.isBlank())
                .mapToInt(l -> l.length() - l.stripLeading().length())
                .min()
                .orElse(0);
        StringBuilder text = new StringBuilder();
        for (String line : lines) {
            text.append(line.isBlank() ? "" : line.substring(indent)).append('\n');
        }
        return text.toString();
    }
}
