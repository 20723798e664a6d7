# frozen_string_literal: true

require "test_helper"
require "uri"

# Every relative link of the project's Markdown leads somewhere: in README.md, CONTRIBUTING.md, CHANGELOG.md and
# docs/*.md, each `[text](target)` that is not a URL (nor inside a fenced code block) names a file or folder of the
# checkout, relative to the linking file's folder, and its `#anchor`, in the same file or a Markdown target, is one
# of that file's headings by GitHub's rules. And the README's table of contents lists every `##` section of it.
class LinksTest < Minitest::Test
  ROOT = File.expand_path("../..", __dir__)
  FILES = ["README.md", "CONTRIBUTING.md", "CHANGELOG.md", *Dir["docs/*.md", base: ROOT].sort].freeze
  # A link or an image: its text (which may hold `code`, brackets one level deep and line breaks) and its target,
  # with an optional title.
  LINK = /!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*<?([^()\s<>]*)>?(?:\s+"[^"]*")?\s*\)/
  # A target with a scheme (https:, mailto:) or a protocol-relative one: not a file of the checkout.
  URL = %r{\A(?:[a-z][a-z0-9+.-]*:|//)}i
  HEADING = /^(\#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$/
  TOC = "Table of contents"

  # +text+ with the lines of its fenced code blocks blanked, so that line numbers still hold.
  def self.prose(text)
    fence = nil
    text.lines.map do |line|
      marker = line[/\A {0,3}(`{3,}|~{3,})/, 1]
      if fence.nil? && marker
        fence = marker
        "\n"
      elsif fence
        fence = nil if marker&.start_with?(fence) && line.strip.delete(fence[0]).empty?
        "\n"
      else
        line
      end
    end.join
  end

  # GitHub's anchor for a heading: links reduced to their text and HTML tags dropped, lowercased, every character
  # but letters, digits, spaces, `-` and `_` dropped (backticks too), each space a `-`.
  def self.slug(heading)
    text = heading.gsub(/!?\[([^\]]*)\]\([^)]*\)/, '\1').gsub(/<[^>]*>/, "")
    text.downcase.gsub(/[^\p{L}\p{M}\p{N}\p{Pc} -]/, "").tr(" ", "-")
  end

  # The anchors of a Markdown text's headings, in order (a repeated one gets -1, -2, ...), as [level, text, anchor].
  def self.headings(text)
    seen = Hash.new(0)
    prose(text).scan(HEADING).map do |hashes, title|
      base = slug(title)
      anchor = seen[base].zero? ? base : "#{base}-#{seen[base]}"
      seen[base] += 1
      [hashes.size, title, anchor]
    end
  end

  def self.anchors(text) = headings(text).map(&:last)

  # What is wrong with +path+'s links (relative to ROOT; +text+ is its text), each as "path:line: [text](target):
  # what is missing".
  def broken_links(path, text = File.read(File.join(ROOT, path)))
    folder = File.dirname(File.join(ROOT, path))
    self.class.prose(text).to_enum(:scan, LINK).filter_map do
      match = Regexp.last_match
      target = match[2]
      next if target.empty? || target.match?(URL)

      problem = missing(path, text, folder, target)
      line = text[0, match.begin(0)].count("\n") + 1
      "#{path}:#{line}: [#{match[1].gsub(/\s*\n\s*/, ' ')}](#{target}): #{problem}" if problem
    end
  end

  # What +target+, a link of +path+ (its text +text+, its folder +folder+), lacks: nil when nothing.
  def missing(path, text, folder, target)
    file, anchor = target.split("#", 2).map { URI.decode_uri_component(_1) }
    unless file.empty?
      full = File.expand_path(file, folder)
      return "#{file} is outside the checkout" unless full.start_with?("#{ROOT}/")
      return "no file #{full.delete_prefix("#{ROOT}/")}" unless File.exist?(full)
    end
    return nil if anchor.nil? || !(file.empty? || (file.end_with?(".md") && File.file?(full)))

    named = file.empty? ? path : full.delete_prefix("#{ROOT}/")
    anchors = file.empty? ? self.class.anchors(text) : self.class.anchors(File.read(full))
    "no heading of #{named} has the anchor ##{anchor}" unless anchors.include?(anchor)
  end

  def test_every_relative_link_of_the_docs_leads_somewhere
    assert_includes FILES, "docs/performance.md"
    broken = FILES.flat_map { broken_links(_1) }
    assert broken.empty?, "links that lead nowhere:\n#{broken.join("\n")}"
  end

  def test_the_readme_has_a_table_of_contents_of_its_sections
    text = File.read(File.join(ROOT, "README.md"))
    toc = text[/^## #{TOC}\n(.*?)^## /m, 1]
    refute_nil toc, "README.md has a \"## #{TOC}\" section before its next ## section"
    listed = self.class.prose(toc).scan(LINK).map { _2.delete_prefix("#") }
    sections = self.class.headings(text).select { _1.first == 2 && _1[1] != TOC }
    assert_operator sections.size, :>=, 5, "README.md has its sections"
    unlisted = sections.reject { listed.include?(_1.last) }.map { "## #{_1[1]} (##{_1.last})" }
    assert unlisted.empty?, "README.md's table of contents does not list these sections: #{unlisted.join(', ')}"
  end

  def test_anchors_follow_githubs_rules
    {
      "Durable leases: SQLite, PostgreSQL and MySQL" => "durable-leases-sqlite-postgresql-and-mysql",
      "Concurrency limits: `holds_lease limit: N`" => "concurrency-limits-holds_lease-limit-n",
      "The dashboard at 100,000 resources" => "the-dashboard-at-100000-resources",
      "The holder's side" => "the-holders-side",
      "Set-up and tests" => "set-up-and-tests",
      "See [the core](core/README.md)" => "see-the-core"
    }.each { |heading, anchor| assert_equal anchor, self.class.slug(heading), heading }
    text = "# A\n## Notes\n```ruby\n# Notes\n```\n### Notes\n## Notes\n"
    assert_equal %w[a notes notes-1 notes-2], self.class.anchors(text), "a code block's comment is no heading"
  end

  def test_a_link_that_leads_nowhere_is_caught
    text = <<~MARKDOWN
      # Example

      ## Here

      [here](#here), [the README's core](../README.md#the-rust-core), [a
      folder](../bench/), [a page](https://example.com/#nowhere) and [mail](mailto:someone@example.com).
      [gone](#nowhere) and [lost](../README.md#no-such-heading), [missing](missing.md), ![a picture](gone.png)

      ```markdown
      [in a code block](nowhere.md)
      ```
    MARKDOWN
    assert_equal ["docs/example.md:7: [gone](#nowhere): no heading of docs/example.md has the anchor #nowhere",
                  "docs/example.md:7: [lost](../README.md#no-such-heading): no heading of README.md has the anchor " \
                  "#no-such-heading",
                  "docs/example.md:7: [missing](missing.md): no file docs/missing.md",
                  "docs/example.md:7: [a picture](gone.png): no file docs/gone.png"],
                 broken_links("docs/example.md", text)
  end
end
