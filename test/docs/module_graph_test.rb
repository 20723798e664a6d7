# frozen_string_literal: true

require "test_helper"
require "tsort"

# The Rust crates' modules import each other in one direction: no two modules of the extension (ffi/src) or of the
# simulation (sim/src) reach each other through a circle of imports, and no module of the extension reaches back
# up to its crate root (lib.rs only defines the Ruby module and calls each module's `define`). An arrow is a
# `crate::name` path outside a comment, or a name of a `use crate::{...}` list; a folder (ffi/src/helpers/) is one
# module. The core re-exports its types at its root (`crate::Lease`), so its arrows are not read here.
class ModuleGraphTest < Minitest::Test
  ROOT = File.expand_path("../..", __dir__)

  # The modules of a crate's +src+ folder and the arrows between them, read from +files+ (path relative to src =>
  # its text); +back+ lists the arrows to a name that is no module: the crate root's own items.
  class Graph
    include TSort

    attr_reader :arrows, :back

    def initialize(files)
      @modules = files.keys.map { module_of(_1) }.uniq - ["lib"]
      @arrows = Hash.new { |hash, key| hash[key] = [] }
      @back = []
      files.each { |path, text| read(path, text) unless path == "lib.rs" }
    end

    def self.of(src) = new(Dir["#{src}/**/*.rs"].to_h { [_1.delete_prefix("#{src}/"), File.read(_1)] })

    def circles = strongly_connected_components.select { _1.size > 1 }.map(&:sort)

    def tsort_each_node(&) = @modules.each(&)
    def tsort_each_child(node, &) = @arrows[node].each(&)

    private

    def module_of(path) = path.split("/").first.delete_suffix(".rs")

    def read(path, text)
      from = module_of(path)
      text.each_line do |line|
        next if line.lstrip.start_with?("//")

        targets = line.scan(/(?<![\w:])\$?crate::(\w+)/).flatten
        line.scan(/use crate::\{([^}]*)\}/).flatten.each { |list| targets.concat(list.scan(/(?:\A|,)\s*(\w+)/).flatten) }
        targets.uniq.each { |to| arrow(path, from, to) unless to == from }
      end
    end

    def arrow(path, from, to)
      @modules.include?(to) ? @arrows[from] |= [to] : @back << "#{path} -> lib.rs (#{to})"
    end
  end

  def setup
    checkout_only!("reads this checkout's Rust sources")
  end

  def test_the_extension_has_no_circle_and_no_arrow_back_to_its_root
    graph = Graph.of(File.join(ROOT, "ffi/src"))
    assert_operator graph.arrows.values.sum(&:size), :>, 40, "the extension's modules import each other"
    assert_includes graph.arrows["convert"], "helpers"
    assert_empty graph.circles, "circles of imports among ffi/src's modules"
    assert_empty graph.back, "arrows back up to ffi/src/lib.rs"
  end

  def test_the_simulation_has_no_circle
    graph = Graph.of(File.join(ROOT, "sim/src"))
    assert_includes graph.arrows["run"], "stage"
    assert_empty graph.circles, "circles of imports among sim/src's modules"
  end

  # The checker on made-up sources: a circle through three modules, a nested folder, and an arrow to the root.
  def test_a_circle_and_a_back_arrow_are_caught
    graph = Graph.new(
      "lib.rs" => "mod a;\nmod b;\nmod c;\npub fn root() {}\n",
      "a.rs" => "use crate::b::thing;\n// crate::d::not_an_arrow\n",
      "b.rs" => "use crate::{c, a as _};\n",
      "c/mod.rs" => "mod inner;\n",
      "c/inner.rs" => "fn f() { crate::a::g(); crate::root(); }\n"
    )
    assert_equal [%w[a b c]], graph.circles
    assert_equal ["c/inner.rs -> lib.rs (root)"], graph.back
  end
end
